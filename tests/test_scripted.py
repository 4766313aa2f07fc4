"""rspo.core.policies.scripted: EpsilonExpert, the expert with random moves mixed in (the notebooks' model-free
policy); its episodes through rspo.core.rollout.collect: tests/test_rollout.py."""

from __future__ import annotations

import math

import pytest

import rspo.core.envs
from rspo.core.policies.scripted import EpsilonExpert


def _started(n=1):
    envs = [rspo.core.envs.make("household", split="train") for _ in range(n)]
    infos = [env.reset(task_id=env.task_ids[i])[1] for i, env in enumerate(envs)]
    return envs, [list(info["admissible_actions"]) for info in infos]


def test_epsilon_is_a_probability_and_the_environments_are_needed():
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="epsilon must be in"):
            EpsilonExpert(bad)
    _, cands = _started()
    with pytest.raises(ValueError, match="needs the live environments"):
        EpsilonExpert().act(["p"], cands)
    assert EpsilonExpert.needs_envs


def test_log_probs_are_the_mixtures():
    envs, cands = _started(2)
    (n0, n1) = (len(c) for c in cands)
    greedy = EpsilonExpert(epsilon=0.4).act(["p", "q"], cands, envs=envs, greedy=True)
    for env, c, s, n in zip(envs, cands, greedy, (n0, n1), strict=True):
        assert s.action == env.expert_action() and c[s.choice] == s.action and s.valid_format
        assert s.logprob == pytest.approx(math.log(0.4 / n + 0.6))  # the expert's move under the mixture
    rand = EpsilonExpert(epsilon=1.0, seed=1).act(["p", "q"], cands, envs=envs)
    for c, s in zip(cands, rand, strict=True):
        assert s.action in c and s.logprob == pytest.approx(math.log(1 / len(c)))


def test_the_same_seed_plays_the_same_moves():
    envs, cands = _started(2)

    def moves(seed):
        policy = EpsilonExpert(epsilon=0.5, seed=seed)
        return [s.action for _ in range(10) for s in policy.act(["p", "q"], cands, envs=envs)]

    assert moves(0) == moves(0) and moves(0) != moves(1)
