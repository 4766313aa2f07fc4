"""Solutions to notebook 04's exercises (the code that fills each stub)."""

import torch


# Exercise 1: the swap - the explorer's episode under the outcome reward (process reward dropped)
def my_relabel(episode, spec):
    return [
        spec.outcome_scale * t.outcome_reward + (0.0 if t.valid else spec.invalid_penalty)
        for t in episode.turns
    ]


# Exercise 2: the truncated importance weight min(pi_A_old / pi_B, c), 0 on padding
def my_importance_weights(learner_logp, behaviour_logp, mask, c):
    ratio = torch.exp(learner_logp - behaviour_logp)
    return torch.where(mask, ratio.clamp(max=c), torch.zeros_like(ratio))
