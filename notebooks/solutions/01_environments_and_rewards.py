"""Solutions to notebook 01's exercises (the code that fills each stub).

Exercise 1: the dense reward of each turn, in the units the trainer uses.
"""


def my_dense_rewards(episode, spec):
    rewards = []
    for turn in episode.turns:
        r = spec.outcome_scale * (turn.outcome_reward + spec.process_weight * turn.process_reward)
        if not turn.valid:
            r += spec.invalid_penalty
        rewards.append(r)
    return rewards
