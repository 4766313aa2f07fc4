"""rspo.core.update: the flat turn batch (build_batch) by hand, no model needed; the update step itself is in
test_update_edges.py and, through the trainer, test_glue.py."""

from __future__ import annotations

import pytest

from rspo.core.config import TrainConfig
from rspo.core.rewards import RewardSpec, compute_rewards
from rspo.core.rollout import Episode, Turn
from rspo.core.update import build_batch


def turn(reward=0.0, process=0.0, valid=True, anchor="s", logps=(-1.0,)):
    return Turn("p", ["a", "b"], "a", 0, [1], list(logps), anchor, reward, process, valid)


def episode(group, copy, turns, won=False):
    ep = Episode("household", f"train/{group:05d}", group, copy, turns, won=won)
    ep.score = sum(t.outcome_reward for t in turns)
    return ep


# --- the batch --------------------------------------------------------------------------------------
def test_build_batch_grpo_groups_weights_and_no_signal():
    cfg = TrainConfig(algo="grpo", reward="outcome")
    eps = [
        episode(0, 0, [turn(), turn(reward=1.0)], won=True),
        episode(0, 1, [turn(), turn(), turn()]),
        episode(1, 0, [turn()]),  # group 1: both fail -> no signal
        episode(1, 1, [turn(), turn()]),
    ]
    batch = build_batch(eps, compute_rewards("outcome", eps, cfg_spec(cfg)), cfg)
    assert batch.task_ids.tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    assert batch.traj_ids.tolist() == [0, 0, 1, 1, 1, 2, 3, 3]
    assert batch.episode_returns.tolist() == pytest.approx([10, 10, 0, 0, 0, 0, 0, 0])
    a = batch.adv.tolist()
    assert a[0] > 0 and a[2] < 0 and a[0] == pytest.approx(-a[2])  # (10 - 5) / std  vs (0 - 5) / std
    assert a[5:] == [0.0, 0.0, 0.0]
    assert batch.no_signal_group_ids == {1}
    assert batch.weights.sum().item() == pytest.approx(1.0)
    assert batch.weights[:2].sum().item() == pytest.approx(0.25)  # 4 trajectories, each 1/4
    skip = build_batch(eps, compute_rewards("outcome", eps, cfg_spec(cfg)), TrainConfig(no_signal="skip"))
    assert skip.weights[5:].tolist() == [0.0, 0.0, 0.0] and skip.weights.sum().item() == pytest.approx(1.0)
    m = batch.metrics()
    assert m["rollout/no_signal_groups"] == 1 and m["reward/return"] == pytest.approx(2.5)


def test_build_batch_gigpo_anchor_groups_and_gae_returns():
    cfg = TrainConfig(algo="gigpo", reward="dense")
    eps = [
        episode(0, 0, [turn(anchor="start", process=0.1), turn(anchor="x", reward=1.0)], won=True),
        episode(0, 1, [turn(anchor="start"), turn(anchor="y")]),
    ]
    batch = build_batch(eps, compute_rewards("dense", eps, cfg_spec(cfg)), cfg)
    assert batch.anchor_ids.tolist() == [0, 1, 0, 2]
    assert batch.adv[0] > batch.adv[2]  # same anchor, the better step return wins
    ppo = TrainConfig(algo="ppo")
    for ep in eps:
        for t in ep.turns:
            t.value = 0.5
    b = build_batch(eps, compute_rewards("outcome", eps, cfg_spec(ppo)), ppo)
    assert b.returns is not None and b.returns.tolist() == pytest.approx([10.0, 10.0, 0.0, 0.0])
    assert b.adv.tolist() == pytest.approx([9.5, 9.5, -0.5, -0.5])


def cfg_spec(cfg):
    return RewardSpec(cfg.outcome_scale, cfg.invalid_penalty, cfg.process_weight)


@pytest.mark.parametrize(
    ("algo", "setting"),
    [
        ("grpo", {"adv_norm": "none"}),
        ("gigpo", {"omega": 0.3}),
        ("turn_level", {"gamma": 0.5, "adv_norm": "none"}),
    ],
)
def test_build_batch_passes_the_estimators_options_from_the_config(algo, setting):
    """A non-default option of the estimator (group normalisation, GiGPO's omega, the discount) changes
    the batch's advantages to those of rspo.core.advantages called with that option."""
    from rspo.core.advantages import compute_advantages
    from rspo.core.registry import ESTIMATORS

    eps = [
        episode(0, 0, [turn(anchor="s"), turn(anchor="t", reward=1.0)], won=True),
        episode(0, 1, [turn(anchor="s"), turn(anchor="u"), turn(anchor="t")]),
        episode(0, 2, [turn(anchor="s"), turn(anchor="t", reward=0.5)]),
    ]
    default, changed = TrainConfig(algo=algo), TrainConfig(algo=algo, **setting)
    a = build_batch(eps, compute_rewards("outcome", eps, cfg_spec(default)), default).adv
    batch = build_batch(eps, compute_rewards("outcome", eps, cfg_spec(changed)), changed)
    assert not batch.adv.allclose(a)
    fields = dict(
        task_ids=batch.task_ids,
        traj_ids=batch.traj_ids,
        step_rewards=batch.step_rewards,
        episode_returns=batch.episode_returns,
        anchor_ids=batch.anchor_ids,
    )
    options = ESTIMATORS.entry(changed.estimator).config_options(changed)
    want, _ = compute_advantages(changed.estimator, fields, **options)
    assert batch.adv.tolist() == pytest.approx(want.tolist())


@pytest.mark.parametrize("loss_agg", ["token", "turn"])
def test_build_batch_weighs_turns_by_the_configured_loss_aggregation(loss_agg):
    """Turns of 1, 3 and 2 action tokens (generate mode writes several; a turn with none counts as
    one): "token" weighs each turn by its share of the tokens, "turn" every turn alike."""
    cfg = TrainConfig(algo="grpo", reward="outcome", loss_agg=loss_agg)
    eps = [
        episode(0, 0, [turn(logps=(-1.0,)), turn(reward=1.0, logps=(-1.0, -0.5, -0.2))], won=True),
        episode(0, 1, [turn(logps=(-0.3, -0.4)), turn(logps=())]),
    ]
    batch = build_batch(eps, compute_rewards("outcome", eps, cfg_spec(cfg)), cfg)
    want = [1 / 7, 3 / 7, 2 / 7, 1 / 7] if loss_agg == "token" else [0.25] * 4
    assert batch.weights.tolist() == pytest.approx(want)
