"""rspo.core.rollout: batched multi-turn rollouts into Episode / Turn records, the agent's view of one
environment, and the expert's demonstrations. A scripted policy plays (no model needed); what a rollout
stores for training, with a model, is tested through the trainer in tests/test_glue.py."""

from __future__ import annotations

import pytest

import rspo.core.envs
from rspo.core.policies.scripted import EpsilonExpert
from rspo.core.rollout import AgentView, collect, expert_demonstrations, make_envs


def test_collect_runs_groups_of_copies_in_lockstep_ordered_by_group_and_copy():
    envs = make_envs("household", "train", 5)  # one more than needed: the spare is not used
    tasks = envs[0].task_ids[:2]
    live = []
    eps = collect(EpsilonExpert(epsilon=0.0), envs, tasks, 2, on_turn=lambda t, n: live.append((t, n)))
    assert [(e.task_id, e.group, e.copy) for e in eps] == [
        (tasks[0], 0, 0),
        (tasks[0], 0, 1),
        (tasks[1], 1, 0),
        (tasks[1], 1, 1),
    ]
    for ep in eps:  # the expert wins every task; the outcome is paid once, at the last turn
        assert ep.won and not ep.truncated and ep.progress == 1.0 and ep.source == "learner"
        assert [t.outcome_reward for t in ep.turns] == [0.0] * (len(ep) - 1) + [1.0] and ep.score == 1.0
        assert all(t.valid and t.candidates[t.choice] == t.action and t.anchor for t in ep.turns)
    assert len(eps[0]) == len(eps[1])  # copies of one task under a deterministic expert
    # on_turn after every batched turn: the live count falls to 0 when the longest episode ends
    assert [t for t, _ in live] == list(range(1, max(len(e) for e in eps) + 1)) and live[-1][1] == 0
    assert [n for _, n in live] == [sum(len(e) > t for e in eps) for t in range(1, len(live) + 1)]


def test_collect_needs_an_environment_per_trajectory():
    envs = make_envs("household", "train", 4)
    with pytest.raises(ValueError, match="collect needs 6 environments for 3 tasks x 2, got 4"):
        collect(EpsilonExpert(), envs, envs[0].task_ids[:3], 2)


def test_an_episode_cut_by_the_horizon_is_truncated_and_not_won():
    envs = make_envs("household", "train", 2, max_steps=2)
    eps = collect(EpsilonExpert(epsilon=1.0, seed=3), envs, envs[0].task_ids[:1], 2)
    for ep in eps:
        assert len(ep) == 2 and ep.truncated and not ep.won and ep.score == 0.0


def test_the_prompt_keeps_the_last_history_pairs():
    env = rspo.core.envs.make("household", split="train")
    view = AgentView(env, history=1)
    obs, info = env.reset(task_id=env.task_ids[0])
    view.start(obs, info)
    assert "You have taken" not in view.prompt() and view.prompt().startswith("You are an expert agent")
    for _ in range(2):
        action = env.expert_action()
        before = view.obs
        obs, _, _, _, info = env.step(action)
        view.record(action, obs, info)
    prompt = view.prompt()
    assert f"Your last 1 observation(s) and action(s):\nObservation: {before}\nAction: {action}" in prompt
    assert f"Step 3. Current observation: {obs}" in prompt
    assert "Admissible actions: " + " | ".join(info["admissible_actions"]) in prompt
    bare = AgentView(env, history=1, show_admissible=False)
    bare.start(obs, info)
    assert "Admissible actions" not in bare.prompt() and f"Current observation: {obs}" in bare.prompt()


def test_expert_demonstrations_are_what_collect_shows_the_expert():
    tasks = rspo.core.envs.make("shop", split="train").task_ids[:2]
    eps = collect(EpsilonExpert(epsilon=0.0), make_envs("shop", "train", 2), tasks, 1, greedy=True)
    collected = [(t.prompt, t.candidates, t.action) for ep in eps for t in ep.turns]
    assert expert_demonstrations("shop", "train", tasks) == collected
    generate = expert_demonstrations("shop", "train", tasks[:1], action_mode="generate", history=0)
    assert [a for _, _, a in generate] == [a for p, _, a in collected[: len(generate)]]
    assert all("<action>" in p and "You have taken" not in p for p, _, _ in generate)
