"""The reward swap's pure functions: relabel, replay buffer, truncated importance weights."""

from __future__ import annotations

import contextlib
import functools
import math
import random

import pytest
import torch

from rspo.config import TrainConfig
from rspo.rewards import RewardSpec, compute_rewards
from rspo.rollout import Episode, Turn
from rspo.swap import ReplayBuffer, has_signal, importance_weights, relabel
from rspo.update import build_batch


def turn(reward=0.0, process=0.0, valid=True, anchor="s"):
    return Turn("p", ["a", "b"], "a", 0, [1], [-0.5], anchor, reward, process, valid)


def explorer_group(group, wins):
    """G explorer episodes of one task: process reward everywhere, outcome only where ``wins``."""
    eps = []
    for copy, won in enumerate(wins):
        turns = [turn(process=0.1, anchor="start"), turn(process=0.2 * copy, anchor=f"x{copy}")]
        turns[-1].reward = 1.0 if won else 0.0
        eps.append(Episode("household", f"train/{group:05d}", group, copy, turns, won=won, source="explorer"))
    return eps


def test_relabel_swaps_dense_for_outcome_rewards():
    eps = explorer_group(0, [True, False])
    spec = RewardSpec()
    dense = compute_rewards("dense", eps, spec)
    swapped = relabel(eps, spec)
    assert dense[1] == pytest.approx([1.0, 2.0])  # the explorer was paid for process milestones
    assert swapped == [[0.0, 10.0], [0.0, 0.0]]  # the learner sees only what the outcome says
    assert swapped == compute_rewards("outcome", eps, spec)


def test_relabelled_advantage_equals_the_learners_own_for_the_same_episodes():
    """An explorer episode's outcome-relabelled advantage is the one the learner computes for it."""
    for algo in ("grpo", "gigpo", "rloo"):
        cfg = TrainConfig(algo=algo)
        eps = explorer_group(0, [True, False, False]) + explorer_group(1, [False, True, True])
        as_explorer = build_batch(eps, relabel(eps), cfg)
        learner_eps = [Episode(e.env, e.task_id, e.group, e.copy, e.turns, e.won) for e in eps]
        as_learner = build_batch(learner_eps, compute_rewards("outcome", learner_eps, RewardSpec()), cfg)
        assert torch.equal(as_explorer.adv, as_learner.adv)
        assert as_explorer.adv.abs().sum() > 0


def test_importance_weights_one_when_policies_equal_and_truncated_at_c():
    logp = torch.tensor([[-1.0, -2.0], [-0.5, 0.0]])
    mask = torch.tensor([[True, True], [True, False]])
    w, trunc = importance_weights(logp, logp, mask, c=1.0)
    assert w.tolist() == [[1.0, 1.0], [1.0, 0.0]] and not trunc.any()
    learner = torch.tensor([[0.0, math.log(0.5)], [math.log(3.0), 0.0]])
    w, trunc = importance_weights(learner, torch.zeros(2, 2), mask, c=2.0)
    assert torch.allclose(w, torch.tensor([[1.0, 0.5], [2.0, 0.0]]))  # ratio 3 truncated at c = 2
    assert trunc.tolist() == [[False, False], [True, False]]
    assert not w.requires_grad
    with pytest.raises(ValueError, match="c must be > 0"):
        importance_weights(learner, learner, mask, c=0.0)


def test_buffer_keeps_groups_whole_bounded_and_fresh():
    buf = ReplayBuffer(capacity=3, max_age=2)
    buf.add(explorer_group(0, [True, False]) + explorer_group(1, [False, False]), iteration=0)
    buf.add(explorer_group(2, [True, True]), iteration=1)
    assert len(buf) == 3 and buf.episodes == 6
    buf.add(explorer_group(3, [False, True]), iteration=2)
    assert len(buf) == 3  # capacity: the oldest group left
    assert buf.ages(3) == [3, 2, 1]
    assert buf.evict(now=3) == 1 and buf.ages(3) == [2, 1]
    groups = buf.sample(1, random.Random(0))
    assert len(groups) == 1 and len({ep.group for ep in groups[0].episodes}) == 1
    assert len(buf.sample(10, random.Random(0))) == 2
    restored = ReplayBuffer.from_state(buf.state(), 3, 2)
    assert [g.iteration for g in restored.groups] == [g.iteration for g in buf.groups]
    with pytest.raises(ValueError, match="capacity"):
        ReplayBuffer(capacity=0)


def test_signal_selection_replays_only_groups_the_estimator_learns_from():
    """All-fail and all-succeed groups give GRPO and GiGPO zero advantages after the relabel, so
    ``replay_select="signal"`` samples only the mixed group; uniform sampling may draw any."""
    buf = ReplayBuffer(capacity=8, max_age=2)
    buf.add(explorer_group(0, [True, False]) + explorer_group(1, [False, False]), iteration=0)
    buf.add(explorer_group(2, [True, True]), iteration=0)
    for algo in ("grpo", "gigpo"):
        eligible = functools.partial(has_signal, cfg=TrainConfig(algo=algo))
        assert [eligible(g) for g in buf.groups] == [True, False, False]
        for seed in range(5):
            (picked,) = buf.sample(1, random.Random(seed), eligible)
            assert picked is buf.groups[0]
        assert buf.sample(3, random.Random(0), eligible) == [buf.groups[0]]
    assert {id(g) for s in range(20) for g in buf.sample(1, random.Random(s))} == {id(g) for g in buf.groups}


def test_swap_batch_marks_explorer_turns_off_policy_and_join_weighs_them_by_lambda(one_thread):
    """Episodes the learner itself collected, marked as explorer: importance ratio 1, proximal
    log-probs equal to the behaviour ones, advantages as the learner's own, weights times lambda."""
    from rspo.policies.tiny import untrained_tiny_policy
    from rspo.rollout import collect, make_envs
    from rspo.swap import swap_batch
    from rspo.update import join_batches

    policy = untrained_tiny_policy(0)
    cfg = TrainConfig(algo="gigpo", swap_c=2.0, temperature=3.0, micro_batch=4)
    envs = make_envs("household", "train", 4, max_steps=3)
    eps = collect(
        policy, envs, envs[0].task_ids[:2], 2, temperature=3.0, generator=torch.Generator().manual_seed(0)
    )
    for ep in eps:
        ep.turns[-1].reward = 1.0 if ep.copy == 0 else 0.0  # a synthetic outcome: signal in every group
    own = build_batch(eps, relabel(eps), cfg)
    for ep in eps:
        ep.source = "explorer"
    off, stats = swap_batch(policy, eps, cfg, RewardSpec(), contextlib.nullcontext, scale=0.5)
    assert torch.equal(off.adv, own.adv) and off.adv.abs().sum() > 0
    assert stats["swap/turns"] == sum(len(ep) for ep in eps)
    assert stats["swap/is_ratio_mean"] == pytest.approx(1.0, abs=1e-4) and stats["swap/truncated_frac"] == 0.0
    turns = [t for ep in eps for t in ep.turns]
    for i, t in enumerate(turns):
        assert off.proximal[i] == pytest.approx(t.token_logprobs, abs=1e-4)
        assert off.is_weights[i] == pytest.approx([1.0], abs=1e-4)
    assert torch.allclose(off.weights, 0.5 * own.weights)
    joined = join_batches(own, off, 2.0)
    assert float(joined.weights.sum()) == pytest.approx(1.0 + 2.0 * 0.5)
    assert len(joined.turns) == 2 * len(turns) and not joined.proximal.keys() & set(range(len(turns)))
    assert int(joined.task_ids[len(turns) :].min()) > int(own.task_ids.max())


def test_swap_scores_only_trained_explorer_turns_and_the_update_scores_the_reference_once(one_thread):
    """With ``no_signal="skip"`` a replayed group whose copies all fail is not trained on, so it gets no
    proximal log-probs; with ``cache_reference`` a turn's reference log-probs are computed once (the
    explorer's update) and reused (the learner's replay), equal to a fresh reference pass."""
    from rspo.policies.tiny import untrained_tiny_policy
    from rspo.rollout import collect, make_envs
    from rspo.swap import swap_batch
    from rspo.update import ppo_update, score_turns

    policy = untrained_tiny_policy(0)
    cfg = TrainConfig(algo="grpo", no_signal="skip", temperature=2.0, micro_batch=4, lr=1e-3)
    envs = make_envs("household", "train", 4, max_steps=3)
    eps = collect(
        policy, envs, envs[0].task_ids[:2], 2, temperature=2.0, generator=torch.Generator().manual_seed(0)
    )
    for ep in eps:  # group 0: the first copy succeeds; group 1: every copy fails (no signal)
        ep.turns[-1].reward = 1.0 if ep.group == 0 and ep.copy == 0 else 0.0
        ep.source = "explorer"
    batch, stats = swap_batch(policy, eps, cfg, RewardSpec(), contextlib.nullcontext)
    group0 = [i for i, g in enumerate(batch.task_ids.tolist()) if g == 0]
    assert sorted(batch.proximal) == group0 and sorted(batch.is_weights) == group0
    assert stats["swap/turns"] == len(group0) < sum(len(ep) for ep in eps)

    calls = []
    real = score_turns

    def counting(pol, turns, *args, **kw):
        calls.append((len(turns), kw.get("reference", False)))
        return real(pol, turns, *args, **kw)

    import rspo.update

    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=cfg.lr)
    params = list(policy.trainable_parameters())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rspo.update, "score_turns", counting)
        ppo_update(policy, optimizer, params, batch, cfg, 0, contextlib.nullcontext, cache_reference=True)
        ppo_update(policy, optimizer, params, batch, cfg, 1, contextlib.nullcontext, cache_reference=True)
    assert calls == [(len(group0), True), (0, True)]  # scored once, reused the second time
    turns = [batch.turns[i] for i in group0]
    fresh, _ = real(policy, turns, cfg, contextlib.nullcontext, reference=True)
    for t, f in zip(turns, fresh, strict=True):
        assert t.ref_logprobs == pytest.approx(f, abs=1e-5)
