"""Reward modes: per-turn rewards from Episode records, as pure functions in a registry.

A reward mode maps episodes to one list of per-turn rewards per episode; the estimators of
:mod:`rspo.core.advantages` take it from there. Units follow GiGPO's setup (REFERENCES.md): success is
worth ``outcome_scale`` (10), an invalid action costs ``invalid_penalty`` (-0.1). The environment's
outcome reward is 1.0 on a household success and WebShop's r in [0, 1] on a purchase; its process
reward is in the same units, so ``process_weight`` = 1 adds them at equal weight.

=========  =====================================================================================
mode       per-turn reward r_t
=========  =====================================================================================
outcome    outcome_scale * outcome_t + invalid_penalty * [action invalid]
dense      outcome_scale * (outcome_t + process_weight * process_t) + invalid_penalty * [invalid]
=========  =====================================================================================

``outcome`` is the sparse baseline (the true objective); ``dense`` is the dense-process baseline
(faster signal, possibly misaligned, see each environment's ``process_reward_doc``). The RSPO mode
trains an explorer on ``dense`` and the learner on ``outcome`` (:mod:`rspo.core.swap`). A new mode is one
function and one entry in :data:`REWARD_MODES` (:mod:`rspo.core.registry`, where the config reads the names).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rspo.core.registry import REWARD_MODES, RewardMode, choice_error
from rspo.core.rollout import Episode

__all__ = ["REWARD_MODES", "RewardMode", "RewardSpec", "compute_rewards", "dense_rewards", "outcome_rewards"]


@dataclass(frozen=True)
class RewardSpec:
    """The constants every reward mode uses (from :class:`rspo.core.trainer.TrainConfig`)."""

    outcome_scale: float = 10.0  # reward for a success (GiGPO: 10)
    invalid_penalty: float = -0.1  # per invalid action (GiGPO: -0.1)
    process_weight: float = 1.0  # weight of the process reward relative to the outcome (dense mode)


def outcome_rewards(episodes: Sequence[Episode], spec: RewardSpec = RewardSpec()) -> list[list[float]]:
    """Sparse outcome reward: the environment's outcome, scaled, plus the invalid-action penalty."""
    return [
        [spec.outcome_scale * t.outcome_reward + (0.0 if t.valid else spec.invalid_penalty) for t in ep.turns]
        for ep in episodes
    ]


def dense_rewards(episodes: Sequence[Episode], spec: RewardSpec = RewardSpec()) -> list[list[float]]:
    """Dense baseline: outcome plus the weighted process reward at every turn, plus the invalid penalty."""
    return [
        [
            spec.outcome_scale * (t.outcome_reward + spec.process_weight * t.process_reward)
            + (0.0 if t.valid else spec.invalid_penalty)
            for t in ep.turns
        ]
        for ep in episodes
    ]


RewardFn = Callable[[Sequence[Episode], RewardSpec], list[list[float]]]


def compute_rewards(
    mode: str, episodes: Sequence[Episode], spec: RewardSpec = RewardSpec()
) -> list[list[float]]:
    """Per-turn rewards of ``episodes`` under reward mode ``mode`` (an entry of :data:`REWARD_MODES`)."""
    if mode not in REWARD_MODES:
        raise choice_error("reward mode", mode, REWARD_MODES)
    return REWARD_MODES[mode].function(episodes, spec)
