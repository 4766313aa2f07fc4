"""rspo.core.rewards: the reward modes (outcome, dense) and their registry.

The swap's relabelling with them is tested in tests/test_swap.py."""

from __future__ import annotations

import pytest

from rspo.core.records import Episode, Turn
from rspo.core.rewards import REWARD_MODES, RewardSpec, compute_rewards, dense_rewards, outcome_rewards


def turn(reward=0.0, process=0.0, valid=True):
    return Turn("p", ["a", "b"], "a", 0, [1], [-1.0], "s", reward, process, valid)


def episode(*turns):
    return Episode("shop", "test/00000", 0, 0, list(turns))


def test_default_units_are_gigpos():
    spec = RewardSpec()
    assert (spec.outcome_scale, spec.invalid_penalty, spec.process_weight) == (10.0, -0.1, 1.0)
    # a shop purchase of reward 0.5 by an invalid last action: the scaled outcome and the penalty
    eps = [episode(turn(process=0.2), turn(reward=0.5, valid=False))]
    assert outcome_rewards(eps) == [[0.0, pytest.approx(4.9)]]
    assert dense_rewards(eps) == [[pytest.approx(2.0), pytest.approx(4.9)]]


def test_one_reward_per_turn_per_episode_in_order():
    eps = [episode(turn(), turn(), turn(reward=1.0)), episode(), episode(turn(valid=False))]
    assert compute_rewards("outcome", eps) == [[0.0, 0.0, 10.0], [], [-0.1]]


def test_outcome_ignores_the_process_reward_and_dense_without_weight_is_outcome():
    eps = [episode(turn(process=0.3), turn(process=-0.2, valid=False), turn(reward=1.0, process=0.5))]
    bare = [episode(turn(), turn(valid=False), turn(reward=1.0))]
    spec = RewardSpec(outcome_scale=3.0, invalid_penalty=-0.5, process_weight=0.0)
    assert (
        compute_rewards("outcome", eps, spec) == compute_rewards("outcome", bare, spec) == [[0.0, -0.5, 3.0]]
    )
    assert compute_rewards("dense", eps, spec) == compute_rewards("outcome", eps, spec)
    doubled = RewardSpec(outcome_scale=3.0, invalid_penalty=-0.5, process_weight=2.0)
    assert compute_rewards("dense", eps, doubled)[0] == pytest.approx([1.8, -1.7, 6.0])


def test_a_new_mode_is_one_function_and_one_registry_entry():
    from rspo.core.config import TrainConfig
    from rspo.core.registry import RewardMode

    def constant(episodes, spec):
        return [[spec.outcome_scale] * len(ep.turns) for ep in episodes]

    with pytest.raises(ValueError, match="unknown reward mode 'flat'; choose one of: outcome, dense$"):
        compute_rewards("flat", [episode(turn())])
    with pytest.raises(ValueError, match="TrainConfig.reward"):
        TrainConfig(reward="flat")
    with REWARD_MODES.temporary(RewardMode("flat", constant)):
        assert compute_rewards("flat", [episode(turn(), turn())], RewardSpec(outcome_scale=2.0)) == [
            [2.0, 2.0]
        ]
        with pytest.raises(ValueError, match="choose one of: outcome, dense, flat"):
            compute_rewards("sparse", [])
        assert TrainConfig(reward="flat").reward_at(0) == "flat"  # the config takes it: no second list
    assert "flat" not in REWARD_MODES


def test_outcome_and_dense_rewards_by_hand():
    ep = episode(turn(process=0.1), turn(valid=False), turn(reward=1.0, process=0.15))
    ep.won = True
    spec = RewardSpec(outcome_scale=10.0, invalid_penalty=-0.1, process_weight=1.0)
    assert compute_rewards("outcome", [ep], spec) == [[0.0, -0.1, 10.0]]
    dense = compute_rewards("dense", [ep], spec)[0]
    assert dense == pytest.approx([1.0, -0.1, 11.5])
    half = compute_rewards("dense", [ep], RewardSpec(process_weight=0.5))[0]
    assert half == pytest.approx([0.5, -0.1, 10.75])
    with pytest.raises(ValueError, match="outcome, dense"):
        compute_rewards("sparse", [ep], spec)
