"""rspo.core.update: the cases mutation testing found untested (benchmarks/mutation.py, docs/mutation.md).

The logged batch metrics and the joined (on + off-policy) batch by hand, scoring in micro-batches with
values and against the reference, and the update's value loss, seeded minibatch order and empty batch.
"""

from __future__ import annotations

import contextlib
import math

import pytest
import torch

from rspo.core.config import TrainConfig
from rspo.core.policies.base import TurnInput
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.rewards import RewardSpec, compute_rewards
from rspo.core.rollout import Episode, Turn, collect, make_envs
from rspo.core.update import build_batch, join_batches, ppo_update, score_turns

pytestmark = pytest.mark.usefixtures("one_thread")
NULL = contextlib.nullcontext


def turn(reward=0.0, anchor="s", logps=(-1.0,)):
    return Turn("p", ["a", "b"], "a", 0, [1], list(logps), anchor, reward, 0.0, True)


def episode(group, copy, rewards):
    return Episode(
        "household",
        f"train/{group:05d}",
        group,
        copy,
        [turn(r, anchor=f"a{k}") for k, r in enumerate(rewards)],
    )


def hand_batch(cfg=None):
    """Group 0: a 2-turn success and a 3-turn failure; group 1: two failures (no signal)."""
    cfg = cfg or TrainConfig(algo="grpo")
    eps = [episode(0, 0, [0, 1]), episode(0, 1, [0, 0, 0]), episode(1, 0, [0]), episode(1, 1, [0, 0])]
    return build_batch(eps, compute_rewards("outcome", eps, RewardSpec()), cfg)


def test_batch_metrics_by_hand():
    m = hand_batch().metrics()
    a = 5.0 / (math.sqrt(50.0) + 1e-6)  # group 0: returns 10 and 0, (R - 5) / (unbiased std + eps)
    adv = [a, a, -a, -a, -a, 0.0, 0.0, 0.0]
    mean = sum(adv) / 8
    std = math.sqrt(sum((x - mean) ** 2 for x in adv) / 7)
    want = {
        "reward/return": 2.5,  # mean over the 4 trajectories, not the 8 turns (which gives 1.25)
        "reward/step_mean": 10.0 / 8,
        "adv/mean": mean,
        "adv/std": std,
        "adv/abs_mean": 5 * a / 8,
        "adv/zero_frac": 3 / 8,
        "rollout/no_signal_groups": 1,
        "rollout/no_signal_frac": 0.5,
    }
    assert m == pytest.approx(want, rel=1e-6)


def test_batch_metrics_of_one_turn_and_of_none():
    cfg = TrainConfig(algo="grpo")
    one = build_batch([episode(0, 0, [1])], [[10.0]], cfg).metrics()
    assert one["reward/return"] == 10.0 and one["reward/step_mean"] == 10.0 and one["adv/std"] == 0.0
    assert one["adv/zero_frac"] == 1.0 and one["rollout/no_signal_frac"] == 1.0
    none = build_batch([], [], cfg).metrics()
    assert none == {k: 0 for k in none} and set(none) == set(one)


def test_join_batches_by_hand():
    cfg = TrainConfig(algo="ppo")
    on, off = hand_batch(cfg), hand_batch(cfg)
    n = len(on.turns)
    on.proximal, on.is_weights = {1: [-1.0]}, {1: [0.5]}
    off.proximal, off.is_weights = {0: [-2.0], 4: [-3.0]}, {0: [1.0], 4: [0.25]}
    j = join_batches(on, off, 0.5)
    assert j.turns == on.turns + off.turns
    assert j.task_ids.tolist() == on.task_ids.tolist() + [g + 2 for g in off.task_ids.tolist()]
    assert j.traj_ids.tolist() == on.traj_ids.tolist() + [t + 4 for t in off.traj_ids.tolist()]
    shift = int(on.anchor_ids.max()) + 1
    assert j.anchor_ids.tolist() == on.anchor_ids.tolist() + [a + shift for a in off.anchor_ids.tolist()]
    for name in ("step_rewards", "episode_returns", "adv", "values", "returns"):
        assert torch.equal(getattr(j, name), torch.cat([getattr(on, name), getattr(off, name)])), name
    assert torch.equal(j.weights, torch.cat([on.weights, 0.5 * off.weights]))
    assert j.no_signal_group_ids == {1, 3}
    assert j.proximal == {1: [-1.0], n: [-2.0], n + 4: [-3.0]}
    assert j.is_weights == {1: [0.5], n: [1.0], n + 4: [0.25]}
    grpo = hand_batch()  # no values: a join with a critic-free batch has none
    assert join_batches(on, grpo, 1.0).values is None and join_batches(grpo, on, 1.0).returns is None
    empty = build_batch([], [], cfg)
    k = join_batches(empty, off, 1.0)  # nothing before: no shift
    assert k.task_ids.tolist() == off.task_ids.tolist() and k.traj_ids.tolist() == off.traj_ids.tolist()
    assert k.anchor_ids.tolist() == off.anchor_ids.tolist() and k.no_signal_group_ids == {1}


def rollout(policy, seed=0):
    envs = make_envs("household", "train", 4, max_steps=3)
    eps = collect(
        policy, envs, envs[0].task_ids[:2], 2, temperature=3.0, generator=torch.Generator().manual_seed(seed)
    )
    for ep in eps:
        ep.turns[-1].outcome_reward = 1.0 if ep.copy == 0 else 0.0
    return eps


def test_score_turns_in_micro_batches_with_values_and_reference():
    policy = untrained_tiny_policy(0, value_head=True)
    cfg = TrainConfig(algo="ppo", micro_batch=5, temperature=3.0)
    turns = [t for ep in rollout(policy) for t in ep.turns]
    assert len(turns) > cfg.micro_batch
    inputs = [(t.prompt, t.candidates, t.choice, t.action_ids) for t in turns]
    with torch.no_grad():
        out = policy.logprobs([TurnInput(*x) for x in inputs], values=True, temperature=3.0)
    logps, vals = score_turns(policy, turns, cfg, NULL)
    assert vals is None and len(logps) == len(turns)
    assert [lp[0] for lp in logps] == pytest.approx(out.logp[:, 0].tolist(), abs=1e-5)
    logps, vals = score_turns(policy, turns, cfg, NULL, values=True)
    assert vals == pytest.approx(out.values.tolist(), abs=1e-5)  # every micro-batch's values, in order
    with torch.no_grad():  # move the policy away from its frozen reference
        for p in policy.trainable_parameters():
            p.add_(0.05 * torch.randn_like(p))
    now, _ = score_turns(policy, turns, cfg, NULL)
    ref, _ = score_turns(policy, turns, cfg, NULL, reference=True)
    assert [r[0] for r in ref] == pytest.approx(
        [lp[0] for lp in logps], abs=1e-5
    )  # the reference did not move
    assert max(abs(a[0] - b[0]) for a, b in zip(now, ref, strict=True)) > 1e-3  # the default is the policy


def test_ppo_update_value_loss_by_hand():
    policy = untrained_tiny_policy(0, value_head=True)
    cfg = TrainConfig(algo="ppo", micro_batch=4, minibatch_turns=64, kl_coef=0.0, temperature=3.0)
    eps = rollout(policy)
    for ep in eps:
        for t in ep.turns:
            t.value = 0.3  # stale stored values: the targets are returns = GAE advantages + 0.3
    batch = build_batch(eps, compute_rewards("outcome", eps, RewardSpec()), cfg)
    with torch.no_grad():
        v = policy.logprobs(batch.inputs(range(len(batch.turns))), values=True, temperature=3.0).values
    w, g = batch.weights, batch.returns
    want = float((w * 0.5 * (v - g) ** 2).sum() / w.sum())
    params = list(policy.trainable_parameters())
    stats = ppo_update(policy, torch.optim.SGD(params, lr=1e-3), params, batch, cfg, 0, NULL)
    assert want > 1.0 and stats["loss/value"] == pytest.approx(want, rel=1e-4)


def test_ppo_update_minibatch_order_is_seeded_and_an_empty_batch_takes_no_step():
    def update(seed_policy=0):
        policy = untrained_tiny_policy(seed_policy)
        cfg = TrainConfig(algo="grpo", micro_batch=2, minibatch_turns=3, kl_coef=0.0, temperature=3.0)
        eps = rollout(policy)
        batch = build_batch(eps, compute_rewards("outcome", eps, RewardSpec()), cfg)
        batch.adv = torch.tensor([(1.0, -0.5, 2.0, 0.5)[i % 4] for i in range(len(batch.turns))])
        params = list(policy.trainable_parameters())
        stats = ppo_update(policy, torch.optim.SGD(params, lr=0.5), params, batch, cfg, 3, NULL)
        return [p.detach().clone() for p in params], stats

    a, stats = update()
    b, _ = update()
    assert stats["loss/steps"] > 2  # several minibatches: their order matters
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))

    policy = untrained_tiny_policy(0)
    cfg = TrainConfig(algo="grpo", no_signal="skip")
    batch = hand_batch(cfg)
    batch.weights.zero_()
    params = list(policy.trainable_parameters())
    before = [p.detach().clone() for p in params]
    stats = ppo_update(policy, torch.optim.SGD(params, lr=1.0), params, batch, cfg, 0, NULL)
    assert stats["loss/steps"] == 0 and stats["loss/turns"] == 0
    assert all(v == 0.0 for k, v in stats.items() if k not in ("loss/steps", "loss/turns"))
    assert all(torch.equal(x, y) for x, y in zip(before, params, strict=True))


def test_batch_metrics_of_two_turns():
    cfg = TrainConfig(algo="grpo")
    two = build_batch([episode(0, 0, [1]), episode(0, 1, [0])], [[10.0], [0.0]], cfg)
    a = 5.0 / (math.sqrt(50.0) + 1e-6)
    assert two.adv.tolist() == pytest.approx([a, -a])
    assert two.metrics()["adv/std"] == pytest.approx(math.sqrt(2) * a)  # std of [a, -a], not 0


def test_a_non_finite_loss_names_the_iteration_the_update_and_what_to_do():
    from rspo.core.update import NonFiniteError

    policy = untrained_tiny_policy(0)
    cfg = TrainConfig(algo="grpo", kl_coef=0.0)
    batch = hand_batch(cfg)
    batch.adv[0] = math.nan
    params = list(policy.trainable_parameters())
    with pytest.raises(NonFiniteError) as err:
        ppo_update(policy, torch.optim.SGD(params, lr=1.0), params, batch, cfg, 4, NULL, name="explorer")
    assert str(err.value) == (
        "iteration 5: the explorer update's loss is not finite (nan) at epoch 1, minibatch 1; training "
        "stopped (no checkpoint is written from here: the last one on disk is kept). Lower lr, raise "
        "kl_coef or check the rewards"
    )


def test_the_value_loss_moves_the_value_head_toward_the_returns():
    """Zero advantages, no KL, no entropy bonus: only the value loss acts. With the value head moved off
    its zero start (where V - G and V + G square alike), the logged loss/value is the weighted
    0.5 (V - G)^2 before the step, by hand, and the step lowers it (a value loss with the wrong sign
    raises it)."""
    policy = untrained_tiny_policy(0, value_head=True)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in policy.value_head.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g))
    cfg = TrainConfig(
        algo="ppo", micro_batch=4, minibatch_turns=64, kl_coef=0.0, entropy_coef=0.0, temperature=3.0
    )
    eps = rollout(policy)
    for ep in eps:
        for t in ep.turns:
            t.value = 0.3
    batch = build_batch(eps, compute_rewards("outcome", eps, RewardSpec()), cfg)
    batch.adv = torch.zeros(len(batch.turns))
    w, returns = batch.weights, batch.returns

    def value_error():
        with torch.no_grad():
            v = policy.logprobs(batch.inputs(range(len(batch.turns))), values=True, temperature=3.0).values
        return float((w * 0.5 * (v - returns) ** 2).sum() / w.sum()), v

    before, v = value_error()
    assert float(v.abs().min()) > 1e-3 and float(returns.abs().max()) > 0.1
    params = list(policy.trainable_parameters())
    stats = ppo_update(policy, torch.optim.SGD(params, lr=1e-2), params, batch, cfg, 0, NULL)
    assert stats["loss/value"] == pytest.approx(before, rel=1e-4)
    assert value_error()[0] < before


class Peer:
    """The other process of a two-process run, as ``ppo_update`` meets it through ``rspo.core.distributed.Dist``'s
    collectives: ``max_int`` returns the larger of this process's value and the peer's next scripted
    one (per epoch: its minibatch count, then per minibatch 1 if its loss was not finite);
    ``average_grads`` is counted."""

    active = True

    def __init__(self, script):
        self.script, self.averaged = list(script), 0

    def max_int(self, n):
        return max(n, self.script.pop(0))

    def average_grads(self, params):
        self.averaged += 1


def test_a_non_finite_loss_on_another_process_stops_this_one_before_any_step():
    """Every process stops at the same minibatch when any one's loss is not finite (tests/test_distributed.py
    runs two real processes, but none of their losses is)."""
    from rspo.core.update import NonFiniteError

    policy = untrained_tiny_policy(0)
    cfg = TrainConfig(algo="grpo", kl_coef=0.0)
    params = list(policy.trainable_parameters())
    before = [p.detach().clone() for p in params]
    peer = Peer([0, 1])  # the peer has fewer minibatches, and its first loss is nan
    with pytest.raises(
        NonFiniteError, match=r"loss is not finite \(on another process\) at epoch 1, minibatch 1"
    ):
        ppo_update(policy, torch.optim.SGD(params, lr=1.0), params, hand_batch(cfg), cfg, 0, NULL, dist=peer)
    assert peer.script == [] and peer.averaged == 0
    assert all(torch.equal(x, y) for x, y in zip(before, params, strict=True))
    batch = hand_batch(cfg)
    batch.weights.zero_()  # no turns here: this process steps with the peer, and stops with it
    with pytest.raises(NonFiniteError, match=r"\(on another process\) at epoch 1, minibatch 2"):
        ppo_update(policy, torch.optim.SGD(params, lr=1.0), params, batch, cfg, 0, NULL, dist=Peer([2, 0, 1]))


def test_a_process_with_no_turns_takes_as_many_steps_as_the_other():
    """Its turns all weigh 0 (or it has none): it still takes the other process's number of steps, each
    with the gradient averaging, so that the two keep equal weights; its own gradients are none."""
    policy = untrained_tiny_policy(0)
    cfg = TrainConfig(algo="grpo", kl_coef=0.0, ppo_epochs=2)
    batch = hand_batch(cfg)
    batch.weights.zero_()
    params = list(policy.trainable_parameters())
    before = [p.detach().clone() for p in params]
    peer = Peer([3, 0, 0, 0] * 2)  # per epoch: the peer's 3 minibatches, each with a finite loss
    stats = ppo_update(policy, torch.optim.SGD(params, lr=1.0), params, batch, cfg, 0, NULL, dist=peer)
    assert stats["loss/steps"] == 6 and peer.averaged == 6 and peer.script == []
    assert stats["loss/turns"] == 0 and stats["loss/grad_norm"] == 0.0
    assert all(torch.equal(x, y) for x, y in zip(before, params, strict=True))
