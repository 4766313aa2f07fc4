"""Rewards, losses, the flat turn batch and the config: pure pieces of the trainer, no model needed."""

from __future__ import annotations

import math

import pytest
import torch

from rspo.config import TrainConfig
from rspo.losses import kl_k3, ppo_clip_loss, turn_weights
from rspo.rewards import RewardSpec, compute_rewards
from rspo.rollout import Episode, Turn
from rspo.update import build_batch


def turn(reward=0.0, process=0.0, valid=True, anchor="s", logps=(-1.0,)):
    return Turn("p", ["a", "b"], "a", 0, [1], list(logps), anchor, reward, process, valid)


def episode(group, copy, turns, won=False):
    ep = Episode("household", f"train/{group:05d}", group, copy, turns, won=won)
    ep.score = sum(t.reward for t in turns)
    return ep


# --- rewards ---------------------------------------------------------------------------------------
def test_outcome_and_dense_rewards_by_hand():
    ep = episode(0, 0, [turn(process=0.1), turn(valid=False), turn(reward=1.0, process=0.15)], won=True)
    spec = RewardSpec(outcome_scale=10.0, invalid_penalty=-0.1, process_weight=1.0)
    assert compute_rewards("outcome", [ep], spec) == [[0.0, -0.1, 10.0]]
    dense = compute_rewards("dense", [ep], spec)[0]
    assert dense == pytest.approx([1.0, -0.1, 11.5])
    half = compute_rewards("dense", [ep], RewardSpec(process_weight=0.5))[0]
    assert half == pytest.approx([0.5, -0.1, 10.75])
    with pytest.raises(ValueError, match="outcome, dense"):
        compute_rewards("sparse", [ep], spec)


# --- losses ----------------------------------------------------------------------------------------
def test_turn_weights_each_trajectory_weighs_the_same():
    traj = torch.tensor([0, 0, 0, 0, 1])  # a 4-turn and a 1-turn trajectory
    tokens = torch.tensor([1, 1, 1, 1, 1])
    assert turn_weights(traj, tokens, "trajectory").tolist() == pytest.approx([0.125] * 4 + [0.5])
    assert turn_weights(traj, tokens, "turn").tolist() == pytest.approx([0.2] * 5)
    assert turn_weights(traj, torch.tensor([1, 1, 1, 1, 4]), "token").tolist() == pytest.approx(
        [0.125] * 4 + [0.5]
    )
    with pytest.raises(ValueError, match="trajectory, turn, token"):
        turn_weights(traj, tokens, "sample")


def test_ppo_clip_by_hand():
    logp = torch.log(torch.tensor([[1.5], [0.5], [1.1]]))  # ratios 1.5, 0.5, 1.1 against old log 1 = 0
    old = torch.zeros(3, 1)
    mask = torch.ones(3, 1, dtype=torch.bool)
    loss, clipped = ppo_clip_loss(logp, old, torch.tensor([1.0, -1.0, 2.0]), mask, clip_eps=0.2)
    # A>0, r=1.5 -> min(1.5, 1.2)*1 = 1.2; A<0, r=0.5 -> min(-0.5, -0.8) = -0.8; r=1.1 -> 2.2
    assert loss.tolist() == pytest.approx([-1.2, 0.8, -2.2])
    assert clipped.tolist() == [1.0, 1.0, 0.0]


def test_ppo_clip_averages_tokens_within_a_turn_and_ignores_padding():
    logp = torch.tensor([[0.0, 0.0, 5.0]])
    mask = torch.tensor([[True, True, False]])
    loss, _ = ppo_clip_loss(logp, torch.zeros(1, 3), torch.tensor([3.0]), mask)
    assert loss.tolist() == pytest.approx([-3.0])


def test_kl_k3_zero_at_equality_and_positive_otherwise():
    mask = torch.ones(2, 1, dtype=torch.bool)
    assert kl_k3(torch.tensor([[-1.0], [-2.0]]), torch.tensor([[-1.0], [-2.0]]), mask).tolist() == [0.0, 0.0]
    r = math.log(0.5)  # ref/pi = 0.5
    assert kl_k3(torch.tensor([[0.0]]), torch.tensor([[r]]), mask[:1]).item() == pytest.approx(0.5 - r - 1)


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


# --- the config --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad, match",
    [
        (dict(algo="dpo"), "grpo, ppo, gigpo"),
        (dict(reward="sparse"), "outcome, dense"),
        (dict(lr=0.0), "lr"),
        (dict(iterations="10"), "iterations must be int"),
        (dict(group_size=0), "group_size"),
        (dict(misalignment=1.5), "misalignment"),
        (dict(temperature=0.0), "temperature"),
        (dict(lora=True), "lora needs model"),
        (dict(loss_agg="sum"), "trajectory, turn, token"),
        (dict(progress="yes"), "progress must be bool"),
    ],
)
def test_config_errors_are_clear(bad, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**bad)


def test_config_json_round_trip_and_unknown_fields(tmp_path):
    cfg = TrainConfig(env="shop", algo="ppo", reward="dense", seed=3, lr=3e-4)
    cfg.save(tmp_path / "c.json")
    assert TrainConfig.load(tmp_path / "c.json") == cfg
    assert cfg.name == "shop-ppo-dense-s3" and cfg.estimator == "gae"
    with pytest.raises(ValueError, match="unknown TrainConfig fields"):
        TrainConfig.from_dict({"learning_rate": 1.0})


def test_every_config_field_is_documented():
    import dataclasses

    from rspo.config import field_docs

    docs = field_docs()
    missing = [f.name for f in dataclasses.fields(TrainConfig) if f.name not in docs]
    assert not missing, f"fields without a one-line doc: {missing}"
