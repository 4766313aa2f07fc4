"""RSPO's explorer as its own piece, and the variant registry: a new variant is one function and one
entry (rspo.core.explorer, rspo.core.registry.SWAP_VARIANTS)."""

from __future__ import annotations

import pytest
from test_trainer import small

from rspo.core.config import TrainConfig
from rspo.core.explorer import Explorer
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.registry import SWAP_VARIANTS, SwapVariant
from rspo.core.trainer import Trainer


def test_the_registered_variants_say_who_needs_an_explorer_and_who_switches_rewards():
    assert list(SWAP_VARIANTS) == ["offpolicy", "mixed", "schedule"]
    assert [v.explorer for v in SWAP_VARIANTS.values()] == [True, True, False]
    cfg = TrainConfig(reward="rspo", swap_variant="schedule", iterations=10, schedule_frac=0.3)
    assert [cfg.reward_at(i) for i in (0, 2, 3, 9)] == ["dense", "dense", "outcome", "outcome"]
    assert not cfg.uses_explorer
    assert TrainConfig(reward="rspo", swap_variant="mixed").uses_explorer
    assert not TrainConfig(reward="dense", swap_variant="mixed").uses_explorer  # only under the swap
    with pytest.raises(ValueError, match="TrainConfig.swap_variant"):
        TrainConfig(reward="rspo", swap_variant="handover")


def test_a_new_variant_is_one_function_and_one_entry(tmp_path):
    calls = []

    def learner_only(trainer, it, episodes, batch, explored):
        """Hands nothing over: the learner trains on its own batch."""
        calls.append((it, len(episodes), len(explored), {ep.source for ep in explored}))
        return batch, {"swap/handed": float(len(explored))}

    with SWAP_VARIANTS.temporary(SwapVariant("learner_only", hand_over=learner_only)):
        cfg = small(tmp_path, algo="grpo", reward="rspo", swap_variant="learner_only", iterations=1)
        assert cfg.uses_explorer and cfg.name.endswith("-learner_only-s0")
        trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
        assert isinstance(trainer.explorer, Explorer)
        rows = trainer.run()
    assert [c[0] for c in calls] == [0]  # once an iteration, with the explorer's own episodes
    assert all(
        n == m == cfg.tasks_per_iter * cfg.group_size and src == {"explorer"} for _, n, m, src in calls
    )
    assert [r["swap/handed"] for r in rows] == [4.0]  # eval_every=0: no row 0
    assert all("explorer/success" in r and "explorer/loss_policy" in r for r in rows)
    assert "learner_only" not in SWAP_VARIANTS  # the registry is as it was


def test_the_explorer_rolls_out_on_its_own_stream_and_counts_its_steps(tmp_path):
    cfg = small(tmp_path, algo="grpo", reward="rspo", iterations=1, swap_budget="matched", tasks_per_iter=4)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    trainer.seed_iteration(0)
    explored, metrics = trainer.explorer.explore(trainer, 0)
    learner_tasks = set(trainer.sample_tasks(0))
    assert {ep.task_id for ep in explored}.isdisjoint(learner_tasks)  # matched: the other half
    assert trainer.env_steps == sum(len(ep) for ep in explored) > 0
    assert metrics["explorer/success"] == sum(ep.won for ep in explored) / len(explored)
    state = trainer.explorer.state()
    assert set(state) == {"explorer_successes", "explorer", "explorer_optimizer", "buffer"}


def test_the_explorer_draws_with_its_own_policy_and_keeps_every_success_it_found(tmp_path):
    """The explorer's rollouts come from its policy, not the learner's (an expert here, beside an
    untrained learner); its metrics are of those episodes; its distinct successes accumulate."""
    from rspo.core.explorer import success_keys
    from rspo.core.metrics import episode_metrics
    from rspo.core.policies.scripted import EpsilonExpert

    cfg = small(tmp_path, algo="grpo", reward="rspo", iterations=2, max_steps=30, lr=3e-4, weight_decay=0.1)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    explorer = trainer.explorer
    group = explorer.optimizer.param_groups[0]
    assert (group["lr"], group["weight_decay"]) == (3e-4, 0.1)
    assert (explorer.buffer.capacity, explorer.buffer.max_age) == (cfg.buffer_groups, cfg.buffer_max_age)
    explorer.policy = EpsilonExpert(0.5, seed=1)
    first, m0 = explorer.explore(trainer, 0)
    second, m1 = explorer.explore(trainer, 1)
    assert m0["explorer/success"] > 0  # the untrained learner wins nothing here: these are the expert's
    for eps, m in ((first, m0), (second, m1)):
        seen = episode_metrics(eps)
        assert m["explorer/success"] == pytest.approx(sum(ep.won for ep in eps) / len(eps))
        assert m["explorer/score"] == pytest.approx(sum(ep.score for ep in eps) / len(eps))
        assert m["explorer/process_return"] == seen["rollout/process_return"]
        assert m["explorer/episode_len"] == seen["rollout/episode_len"]
        assert all(ep.source == "explorer" for ep in eps)
    assert m1["explorer/distinct_successes"] == len(success_keys(first) | success_keys(second))
    assert m1["explorer/distinct_successes"] > m0["explorer/distinct_successes"] == len(success_keys(first))
    assert trainer.env_steps == sum(len(ep) for ep in first + second)
    assert 0 <= m0["time/explorer_rollout"] < 600


def test_replay_reports_the_buffer_it_keeps(tmp_path):
    """The offpolicy hand-over's buffer/* metrics: groups and episodes held, their ages (iterations since
    they were added), the groups replayed; two iterations two apart, two groups each."""
    from rspo.core.explorer import replay
    from rspo.core.policies.scripted import EpsilonExpert

    cfg = small(tmp_path, algo="grpo", reward="rspo", replay_groups=3, buffer_max_age=4)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    trainer.explorer.policy = EpsilonExpert(0.5, seed=1)
    import random

    from rspo.core.streams import STREAM_REPLAY, derive

    sample, states = trainer.explorer.buffer.sample, []

    def recorded(n, rng, eligible=None):
        states.append(rng.getstate())
        return sample(n, rng, eligible)

    trainer.explorer.buffer.sample = recorded
    for it in (0, 2):
        episodes, batch, _ = trainer.collect_iteration(it)
        explored, _ = trainer.explorer.explore(trainer, it)
        joined, m = replay(trainer, it, episodes, batch, explored)
        if it == 0:  # one iteration's two groups, both new
            assert m["buffer/age_mean"] == 0.0 and m["buffer/age_max"] == 0
    # the sample's own stream: the run's seed, the replay stream, the iteration (rspo.core.streams)
    assert states == [random.Random(derive(cfg.seed, STREAM_REPLAY, it)).getstate() for it in (0, 2)]
    assert m["buffer/groups"] == 4 and m["buffer/episodes"] == 8
    assert m["buffer/age_mean"] == 1.0 and m["buffer/age_max"] == 2  # ages 2, 2, 0, 0
    assert m["buffer/replayed_groups"] == 3
    # each replayed group its own (renumbered: groups of two iterations share numbers in the buffer)
    assert len(set(joined.task_ids.tolist())) == len(set(batch.task_ids.tolist())) + 3
    assert len(joined.turns) == len(batch.turns) + m["swap/turns"]
    # the same run replays the same groups: the sample is seeded by the run's seed and the iteration
    same = {k: getattr(cfg, k) for k in ("algo", "reward", "replay_groups", "buffer_max_age")}
    again = Trainer(small(tmp_path, name="again", **same), policy=untrained_tiny_policy(0))
    again.explorer.policy = EpsilonExpert(0.5, seed=1)
    for it in (0, 2):
        episodes, batch, _ = again.collect_iteration(it)
        explored, _ = again.explorer.explore(again, it)
        joined_again, _ = replay(again, it, episodes, batch, explored)
    assert [(t.prompt, t.action) for t in joined_again.turns] == [(t.prompt, t.action) for t in joined.turns]


def test_swap_step_runs_the_explorers_three_steps_with_the_iteration(tmp_path):
    trainer = Trainer(small(tmp_path, algo="grpo", reward="rspo"), policy=untrained_tiny_policy(0))
    calls, explorer = [], trainer.explorer
    explorer.explore = lambda tr, it: calls.append(("explore", it)) or (["x"], {"explorer/success": 0.5})
    explorer.hand_over = lambda tr, it, eps, batch, explored: (
        calls.append(("hand_over", it, explored))
        or (
            "joined",
            {"swap/turns": 3},
        )
    )
    explorer.train = lambda tr, it, explored: calls.append(("train", it, explored)) or {"explorer/kl": 0.1}
    batch, out = trainer.swap_step(5, [], "batch")
    assert batch == "joined" and out == {"explorer/success": 0.5, "swap/turns": 3, "explorer/kl": 0.1}
    assert calls == [("explore", 5), ("hand_over", 5, ["x"]), ("train", 5, ["x"])]


def test_the_explorers_update_reports_its_numbers(tmp_path):
    trainer = Trainer(
        small(tmp_path, algo="grpo", reward="rspo", kl_coef=0.0), policy=untrained_tiny_policy(0)
    )
    import rspo.core.explorer as explorer_mod

    explored, _ = trainer.explorer.explore(trainer, 0)
    calls, update = [], explorer_mod.ppo_update

    def recorded(policy, optimizer, params, batch, cfg, iteration, autocast, dist=None, **kw):
        calls.append((policy, iteration, autocast, dist, kw))
        return update(policy, optimizer, params, batch, cfg, iteration, autocast, dist, **kw)

    explorer_mod.ppo_update = recorded
    try:
        m = trainer.explorer.train(trainer, 3, explored)
    finally:
        explorer_mod.ppo_update = update
    # the explorer's own policy, the iteration (it seeds the minibatch order), the run's processes,
    # its frozen reference cached, errors naming the explorer
    assert calls == [
        (
            trainer.explorer.policy,
            3,
            trainer.autocast,
            trainer.dist,
            {"cache_reference": True, "name": "explorer"},
        )
    ]
    assert set(m) == {"explorer/return", "explorer/loss_policy", "explorer/kl", "time/explorer_update"}
    assert m["explorer/kl"] == 0.0 and 0 <= m["time/explorer_update"] < 600
    assert m["explorer/return"] == trainer.batch(explored, "dense").metrics()["reward/return"]


def test_replay_judges_and_relabels_with_the_runs_reward_settings(tmp_path, monkeypatch):
    """replay_select="signal" asks has_signal under the run's RewardSpec, and the replayed turns are
    relabelled under it too (not under the defaults)."""
    import rspo.core.explorer as explorer_mod

    cfg = small(tmp_path, algo="grpo", reward="rspo", replay_select="signal", outcome_scale=2.0)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    seen = {}
    sample = trainer.explorer.buffer.sample
    trainer.explorer.buffer.sample = lambda n, rng, eligible=None: (
        seen.update(eligible=eligible) or sample(n, rng, eligible)
    )
    swap = explorer_mod.swap_batch
    monkeypatch.setattr(
        explorer_mod,
        "swap_batch",
        lambda policy, eps, cfg, spec, autocast, *a: (
            seen.update(spec=spec) or swap(policy, eps, cfg, spec, autocast, *a)
        ),
    )
    episodes, batch, _ = trainer.collect_iteration(0)
    explored, _ = trainer.explorer.explore(trainer, 0)
    explorer_mod.replay(trainer, 0, episodes, batch, explored)
    assert seen["eligible"].keywords == {"cfg": cfg, "spec": trainer.spec} and seen["spec"] is trainer.spec
    assert trainer.spec.outcome_scale == 2.0


def test_mixed_hands_both_policies_episodes_to_one_swap_batch_with_the_runs_settings(tmp_path, monkeypatch):
    """``mixed`` (its training run is a slow test): the learner's and the explorer's episodes, in that
    order, relabelled by the learner's policy under the run's config, reward constants, autocast and
    ``swap_lambda`` - what swap_batch returns is the variant's batch and metrics."""
    import rspo.core.explorer as explorer_mod

    calls = []
    monkeypatch.setattr(
        explorer_mod, "swap_batch", lambda *a: calls.append(a) or ("batch", {"swap/turns": 3})
    )
    cfg = small(tmp_path, reward="rspo", swap_variant="mixed", swap_lambda=0.25)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    learner, explored = ["l1", "l2"], ["e1"]
    assert explorer_mod.mix(trainer, 3, learner, "learner batch", explored) == ("batch", {"swap/turns": 3})
    ((policy, episodes, got_cfg, spec, autocast, lam),) = calls
    assert policy is trainer.policy and episodes == ["l1", "l2", "e1"] and got_cfg is cfg
    assert spec is trainer.spec and autocast == trainer.autocast and lam == 0.25
