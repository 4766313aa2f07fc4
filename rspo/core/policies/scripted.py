"""A scripted policy for :func:`rspo.core.rollout.collect`: the expert, with random moves mixed in.

``EpsilonExpert(epsilon)`` plays the environment's expert move with probability ``1 - epsilon`` and a
uniformly random admissible action otherwise: a group of its episodes mixes successes, detours and
failures - what the notebooks use to show credit assignment on real trajectories without a model.
It reads the environments (``needs_envs``), which :func:`rspo.core.rollout.collect` passes to such
policies; its log-probs are those of the mixture (so the records are complete), not of a model.
"""

from __future__ import annotations

import math
import random

from rspo.core.policies.base import ActionSample


class EpsilonExpert:
    """Expert with probability ``1 - epsilon``, uniform over the admissible actions otherwise."""

    needs_envs = True

    def __init__(self, epsilon: float = 0.3, seed: int = 0):
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
        self.epsilon = epsilon
        self.rng = random.Random(seed)

    def act(self, prompts, candidates, *, greedy=False, temperature=1.0, generator=None, envs=None):
        if envs is None or len(envs) != len(prompts):
            raise ValueError(
                "EpsilonExpert needs the live environments (rspo.core.rollout.collect passes them)"
            )
        out = []
        for env, cands in zip(envs, candidates, strict=True):
            expert = env.expert_action()
            explore = not greedy and self.rng.random() < self.epsilon
            action = self.rng.choice(cands) if explore and cands else expert
            p = self.epsilon / max(len(cands), 1) + (1 - self.epsilon) * (action == expert)
            choice = cands.index(action) if action in cands else None
            out.append(ActionSample(action, True, [], [math.log(max(p, 1e-12))], choice, None, action))
        return out
