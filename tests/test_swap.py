"""rspo.core.swap: relabel, replay buffer, truncated importance weights, the swap batch.

The second part holds the cases mutation testing found untested (benchmarks/mutation.py,
docs/mutation.md; they were tests/test_swap_edges.py): the learner's critic on explorer turns
(PPO/GAE), a non-default reward spec, the importance-weight statistics by hand, the defaults, and the
replay buffer's bounds across eviction and a checkpoint round trip. The reward swap inside the trainer:
tests/test_trainer.py."""

from __future__ import annotations

import contextlib
import functools
import math
import random

import pytest
import torch

from rspo.core.config import TrainConfig
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.rewards import RewardSpec, compute_rewards
from rspo.core.rollout import Episode, Turn, collect, make_envs
from rspo.core.swap import BufferGroup, ReplayBuffer, has_signal, importance_weights, relabel, swap_batch
from rspo.core.update import build_batch, score_turns


def turn(reward=0.0, process=0.0, valid=True, anchor="s"):
    return Turn("p", ["a", "b"], "a", 0, [1], [-0.5], anchor, reward, process, valid)


def explorer_group(group, wins):
    """G explorer episodes of one task: process reward everywhere, outcome only where ``wins``."""
    eps = []
    for copy, won in enumerate(wins):
        turns = [turn(process=0.1, anchor="start"), turn(process=0.2 * copy, anchor=f"x{copy}")]
        turns[-1].outcome_reward = 1.0 if won else 0.0
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


def test_a_buffer_checkpointed_before_the_outcome_reward_was_renamed_still_loads():
    buf = ReplayBuffer(capacity=3, max_age=2)
    buf.add(explorer_group(0, [True, False]), iteration=0)
    state = buf.state()
    for g in state:  # as written when Turn's outcome field was called "reward"
        for ep in g["episodes"]:
            ep["turns"] = [
                {("reward" if k == "outcome_reward" else k): v for k, v in t.items()} for t in ep["turns"]
            ]
    old = ReplayBuffer.from_state(state, 3, 2)
    new = ReplayBuffer.from_state(buf.state(), 3, 2)
    rewards = [[t.outcome_reward for ep in g.episodes for t in ep.turns] for g in new.groups]
    assert [[t.outcome_reward for ep in g.episodes for t in ep.turns] for g in old.groups] == rewards
    assert any(r > 0 for r in rewards[0])


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
    from rspo.core.policies.tiny import untrained_tiny_policy
    from rspo.core.rollout import collect, make_envs
    from rspo.core.swap import swap_batch
    from rspo.core.update import join_batches

    policy = untrained_tiny_policy(0)
    cfg = TrainConfig(algo="gigpo", swap_c=2.0, temperature=3.0, micro_batch=4)
    envs = make_envs("household", "train", 4, max_steps=3)
    eps = collect(
        policy, envs, envs[0].task_ids[:2], 2, temperature=3.0, generator=torch.Generator().manual_seed(0)
    )
    for ep in eps:
        ep.turns[-1].outcome_reward = (
            1.0 if ep.copy == 0 else 0.0
        )  # a synthetic outcome: signal in every group
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
    from rspo.core.policies.tiny import untrained_tiny_policy
    from rspo.core.rollout import collect, make_envs
    from rspo.core.swap import swap_batch
    from rspo.core.update import ppo_update, score_turns

    policy = untrained_tiny_policy(0)
    cfg = TrainConfig(algo="grpo", no_signal="skip", temperature=2.0, micro_batch=4, lr=1e-3)
    envs = make_envs("household", "train", 4, max_steps=3)
    eps = collect(
        policy, envs, envs[0].task_ids[:2], 2, temperature=2.0, generator=torch.Generator().manual_seed(0)
    )
    for ep in eps:  # group 0: the first copy succeeds; group 1: every copy fails (no signal)
        ep.turns[-1].outcome_reward = 1.0 if ep.group == 0 and ep.copy == 0 else 0.0
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

    import rspo.core.update

    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=cfg.lr)
    params = list(policy.trainable_parameters())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rspo.core.update, "score_turns", counting)
        ppo_update(policy, optimizer, params, batch, cfg, 0, contextlib.nullcontext, cache_reference=True)
        ppo_update(policy, optimizer, params, batch, cfg, 1, contextlib.nullcontext, cache_reference=True)
    assert calls == [(len(group0), True), (0, True)]  # scored once, reused the second time
    turns = [batch.turns[i] for i in group0]
    fresh, _ = real(policy, turns, cfg, contextlib.nullcontext, reference=True)
    for t, f in zip(turns, fresh, strict=True):
        assert t.ref_logprobs == pytest.approx(f, abs=1e-5)


# --- cases found by mutation testing ---------------------------------------------------------------
NULL = contextlib.nullcontext
SPEC = RewardSpec(outcome_scale=3.0, invalid_penalty=-0.5)  # not the default: a dropped spec shows


def episodes(policy, temperature=3.0):
    envs = make_envs("household", "train", 4, max_steps=3)
    eps = collect(
        policy,
        envs,
        envs[0].task_ids[:2],
        2,
        temperature=temperature,
        generator=torch.Generator().manual_seed(0),
    )
    for ep in eps:
        ep.turns[-1].outcome_reward = 1.0 if ep.copy == 0 else 0.0
        ep.turns[0].process_reward = 0.2
    return eps


def test_relabel_and_has_signal_use_the_given_spec():
    eps = [
        Episode("household", "t", 0, c, [turn(valid=c == 0), turn(reward=1.0, process=0.3)]) for c in (0, 1)
    ]
    assert relabel(eps, SPEC) == [[0.0, 3.0], [-0.5, 3.0]] == compute_rewards("outcome", eps, SPEC)
    group = BufferGroup(eps, 0)
    cfg = TrainConfig(algo="grpo")
    assert has_signal(group, cfg, RewardSpec())  # the invalid-action penalty tells the copies apart
    assert not has_signal(group, cfg, RewardSpec(invalid_penalty=0.0))  # without it they are equal


def test_importance_weights_default_truncation_is_1():
    mask = torch.ones(1, 2, dtype=torch.bool)
    w, truncated = importance_weights(torch.tensor([[math.log(1.5), -0.1]]), torch.zeros(1, 2), mask)
    assert w[0].tolist() == pytest.approx([1.0, math.exp(-0.1)]) and truncated.tolist() == [[True, False]]


def gae_case():
    """A PPO policy's episodes, copy 1 of each task marked as the explorer's, with stale values (123)
    stored on the explorer's turns; the values the learner's critic gives every turn now."""
    policy = untrained_tiny_policy(0, value_head=True)
    cfg = TrainConfig(algo="ppo", micro_batch=4, temperature=3.0)
    eps = episodes(policy)
    for ep in eps:
        if ep.copy == 1:
            ep.source = "explorer"
            for t in ep.turns:
                t.value = 123.0  # the explorer's values at collection: not the learner's critic
    eps[0].turns[0].value = None  # a learner turn without a stored value counts as 0
    turns = [t for ep in eps for t in ep.turns]
    off = [i for i, source in enumerate(ep.source for ep in eps for _ in ep.turns) if source == "explorer"]
    logps, critic = score_turns(policy, [turns[i] for i in off], cfg, NULL, values=True)
    values = [0.0 if t.value is None else t.value for t in turns]
    for k, i in enumerate(off):
        values[i] = critic[k]
    assert values[0] == 0.0 and all(abs(values[i] - 123.0) > 1 for i in off)
    return policy, cfg, eps, off, logps, values


def test_swap_batch_with_gae_scores_explorer_turns_with_the_learner():
    """PPO: the explorer's turns get the learner's proximal log-probs, the outcome-relabelled rewards
    of the given spec, and their loss weights (default scale 1)."""
    policy, cfg, eps, off, logps, _ = gae_case()
    batch, stats = swap_batch(policy, eps, cfg, SPEC, NULL)
    assert batch.step_rewards.tolist() == pytest.approx([r for rs in relabel(eps, SPEC) for r in rs])
    assert sorted(batch.proximal) == off and stats["swap/turns"] == len(off)
    for k, i in enumerate(off):
        assert batch.proximal[i] == pytest.approx(logps[k], abs=1e-5)
    assert torch.equal(batch.weights, build_batch(eps, relabel(eps, SPEC), cfg).weights)
    assert batch.values is not None and batch.returns is not None


def test_swap_batch_with_gae_values_explorer_states_with_the_learners_critic():
    """PPO: explorer turns are valued by the learner's critic now, not by the values stored when the
    explorer collected them; the advantages are GAE on the relabelled rewards with those values."""
    policy, cfg, eps, off, logps, values = gae_case()
    batch, _ = swap_batch(policy, eps, cfg, SPEC, NULL)
    assert batch.values.tolist() == pytest.approx(values, abs=1e-5)
    want = build_batch(eps, relabel(eps, SPEC), cfg, values)
    assert torch.allclose(batch.adv, want.adv, atol=1e-5) and torch.allclose(
        batch.returns, want.returns, atol=1e-5
    )


def test_build_batch_uses_the_values_it_is_given_for_gae():
    """The same bug at its source, with numbers by hand: one turn, outcome 10, stored value 4, given 1."""
    ep = Episode("household", "t", 0, 0, [turn(reward=1.0)])
    ep.turns[0].value = 4.0
    cfg = TrainConfig(algo="ppo")
    stored = build_batch([ep], relabel([ep]), cfg)
    assert stored.adv.tolist() == [6.0] and stored.returns.tolist() == [10.0]
    given = build_batch([ep], relabel([ep]), cfg, values=[1.0])
    assert given.values.tolist() == [1.0] and given.adv.tolist() == [9.0]


def test_swap_batch_importance_statistics_by_hand():
    """Behaviour log-probs set below the learner's by known amounts: ratios 1, 1.5, 3 and e^60 (the
    log-ratio is clamped at 50); with c = 2 the weights are 1, 1.5, 2, 2 and half the tokens truncated."""
    policy = untrained_tiny_policy(0)
    cfg = TrainConfig(algo="grpo", swap_c=2.0, micro_batch=4, temperature=3.0)
    eps = episodes(policy)
    for ep in eps:
        ep.source = "explorer"
    turns = [t for ep in eps for t in ep.turns]
    now, _ = score_turns(policy, turns, cfg, NULL)
    gaps = [0.0, math.log(1.5), math.log(3.0), 60.0]
    for k, (t, lp) in enumerate(zip(turns, now, strict=True)):
        t.token_logprobs = [lp[0] - gaps[k % 4]]
    batch, stats = swap_batch(policy, eps, cfg, SPEC, NULL, scale=0.5)
    n = len(turns)
    rho = [math.exp(min(gaps[k % 4], 50.0)) for k in range(n)]
    assert stats["swap/turns"] == n
    assert stats["swap/is_ratio_max"] == pytest.approx(math.exp(50.0), rel=1e-4)
    assert stats["swap/is_ratio_mean"] == pytest.approx(sum(rho) / n, rel=1e-4)
    assert stats["swap/truncated_frac"] == pytest.approx(sum(r > 2.0 for r in rho) / n)
    for k in range(n):
        assert batch.is_weights[k] == pytest.approx([min(rho[k], 2.0)], rel=1e-4)
    own = build_batch(eps, relabel(eps, SPEC), cfg)
    assert torch.allclose(batch.weights, 0.5 * own.weights)


def test_swap_batch_without_explorer_turns_reports_zeros():
    policy = untrained_tiny_policy(0)
    eps = episodes(policy)
    batch, stats = swap_batch(policy, eps, TrainConfig(algo="grpo", micro_batch=4), SPEC, NULL)
    assert stats == {
        "swap/turns": 0,
        "swap/is_ratio_mean": 0.0,
        "swap/is_ratio_max": 0.0,
        "swap/truncated_frac": 0.0,
        "swap/tokens": 0,
        "swap/is_weight_mean": 0.0,
        "swap/episodes": 0,
        "swap/successes": 0,
        "swap/success_group_frac": 0.0,
        "swap/trained_successes": 0,
    }
    assert not batch.proximal and not batch.is_weights


def test_handover_counts_the_explorers_wins_that_the_update_trains():
    """Two explorer groups: one with a win among losses (signal: its turns are trained), one where every
    copy wins (no signal under no_signal=skip: nothing trained); the learner's own win is not counted."""
    from rspo.core.swap import handover_stats

    def ep(group, won, source, n=2):
        turn = dict(prompt="p", candidates=["a"], action="a", choice=0, action_ids=[1], token_logprobs=[0.0])
        turns = [
            Turn(**turn, anchor="", outcome_reward=0.0, process_reward=0.0, valid=True) for _ in range(n)
        ]
        return Episode("detour", f"t{group}", group, 0, turns=turns, won=won, source=source)

    eps = [
        ep(0, True, "explorer"),
        ep(0, False, "explorer"),
        ep(1, True, "explorer"),
        ep(1, True, "explorer"),
    ]
    eps.append(ep(2, True, "learner"))
    trained = [True] * 4 + [False] * 4 + [True] * 2
    stats = handover_stats(eps, trained)
    assert stats == {
        "swap/episodes": 4,
        "swap/successes": 3,
        "swap/success_group_frac": 1.0,
        "swap/trained_successes": 1,
    }
    assert handover_stats(eps, [False] * 10)["swap/trained_successes"] == 0


def group_eps(group, n=2):
    return [
        Episode("household", f"train/{group:05d}", group, c, [turn(reward=float(c == 0))]) for c in range(n)
    ]


def test_replay_buffer_smallest_settings_and_errors():
    buf = ReplayBuffer(capacity=1, max_age=0)
    buf.add(group_eps(0), 0)
    buf.add(group_eps(1), 0)
    assert len(buf) == 1 and buf.groups[0].episodes[0].group == 1
    assert buf.evict(0) == 0 and buf.evict(1) == 1 and len(buf) == 0  # max_age 0: only this iteration's
    for bad in ((0, 0), (1, -1)):
        with pytest.raises(ValueError, match="capacity >= 1 and max_age >= 0"):
            ReplayBuffer(*bad)


def test_replay_buffer_stays_bounded_after_eviction_and_sampling_all_keeps_the_order():
    buf = ReplayBuffer(capacity=2, max_age=5)
    for g in range(3):
        buf.add(group_eps(g), 0)
    buf.evict(1)
    for g in range(3, 6):
        buf.add(group_eps(g), 1)
    assert len(buf) == 2 and [x.episodes[0].group for x in buf.groups] == [4, 5]
    rng = random.Random(0)
    state = rng.getstate()
    assert buf.sample(2, rng) == list(buf.groups) and rng.getstate() == state  # all of them: no draw
    assert buf.sample(5, rng) == list(buf.groups)


def test_replay_buffer_round_trip_keeps_episodes_and_takes_the_given_bounds():
    buf = ReplayBuffer(capacity=4, max_age=3)
    buf.add(group_eps(0), 2)
    buf.add(group_eps(1, n=3), 3)
    back = ReplayBuffer.from_state(buf.state(), capacity=2, max_age=1)
    assert (back.capacity, back.max_age, back.groups.maxlen) == (2, 1, 2)
    assert [g.iteration for g in back.groups] == [2, 3]
    assert [g.episodes for g in back.groups] == [g.episodes for g in buf.groups]
    assert back.evict(4) == 1  # max_age 1: the group of iteration 2 is too old at 4


def test_truncated_fraction_of_a_single_explorer_token():
    policy = untrained_tiny_policy(0)
    cfg = TrainConfig(algo="grpo", swap_c=2.0, micro_batch=4, temperature=3.0)
    eps = episodes(policy)
    eps[0].turns = eps[0].turns[:1]
    eps[0].source = "explorer"
    now, _ = score_turns(policy, eps[0].turns, cfg, NULL)
    eps[0].turns[0].token_logprobs = [now[0][0] - math.log(3.0)]  # ratio 3 > c
    _, stats = swap_batch(policy, eps, cfg, SPEC, NULL)
    assert stats["swap/turns"] == 1 and stats["swap/truncated_frac"] == 1.0
    assert stats["swap/is_ratio_max"] == pytest.approx(3.0, rel=1e-4)


def test_loss_split_is_the_ppo_clip_loss_at_ratio_one_parted_into_own_and_replayed_turns():
    """Notebook 04's split of the learner's loss: own turns plus replayed turns equals the weighted
    PPO-clip loss at the start of the update (every ratio 1), the replayed part weighted by its
    truncated importance weights; a turn of loss weight 0 counts nowhere."""
    import torch

    from rspo.core.losses import ppo_clip_loss
    from rspo.core.swap import loss_split
    from rspo.core.update import TurnBatch

    adv = torch.tensor([1.0, -0.5, 2.0, 0.7, 3.0])
    weights = torch.tensor([0.3, 0.2, 0.25, 0.25, 0.0])
    is_w = {2: [0.5, 1.0, 0.3], 3: [1.0, 0.2, 0.2], 4: [1.0, 1.0, 1.0]}
    z = torch.zeros(5, dtype=torch.long)
    batch = TurnBatch([None] * 5, z, z, adv, adv, z, None, adv, None, weights, is_weights=is_w)
    own, replayed = loss_split(batch, 2)
    tok = torch.ones(5, 3)
    for i, w in is_w.items():
        tok[i] = torch.tensor(w)
    logp = torch.randn(5, 3)
    per_turn, _ = ppo_clip_loss(logp, logp, adv, torch.ones(5, 3, dtype=torch.bool), token_weights=tok)
    assert own == pytest.approx(float((weights[:2] * per_turn[:2]).sum()))
    assert replayed == pytest.approx(float((weights[2:] * per_turn[2:]).sum()))
    assert own == pytest.approx(-(0.3 * 1.0 - 0.2 * 0.5), rel=1e-6) and replayed == pytest.approx(
        -(0.25 * 2.0 * 0.6 + 0.25 * 0.7 * 1.4 / 3), rel=1e-6
    )
