"""rspo.core.trainer: CPU smoke tests of the training loop - every algo x reward mode, resume, determinism,
errors - and the reward swap in the trainer (reward="rspo": every base algorithm, the variants, resume
with a buffer, LoRA twins; they were tests/test_rspo.py). The swap's own functions: tests/test_swap.py."""

from __future__ import annotations

import json

import pytest
import torch

from rspo.core.config import ALGOS, REWARDS, TrainConfig
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.trainer import Trainer

pytestmark = pytest.mark.usefixtures("one_thread")


def small(tmp_path, **kw) -> TrainConfig:
    base = dict(
        env="household",
        iterations=2,
        tasks_per_iter=2,
        group_size=2,
        max_steps=4,
        temperature=20.0,
        eval_every=0,
        checkpoint_every=1,
        out_dir=str(tmp_path),
        progress=False,
        lr=1e-3,
        micro_batch=8,
    )
    base.update(kw)
    return TrainConfig(**base)


def run(cfg: TrainConfig, seed: int = 0):
    policy = untrained_tiny_policy(seed, value_head=cfg.algo == "ppo")
    before = [p.detach().clone() for p in policy.trainable_parameters()]
    rows = Trainer(cfg, policy=policy).run()
    return policy, before, rows


@pytest.mark.parametrize("algo", ALGOS)
# RSPO on every estimator is slow (11 s each); test_glue trains RSPO end to end in make test-fast
@pytest.mark.parametrize(
    "reward", [pytest.param(r, marks=pytest.mark.slow) if r == "rspo" else r for r in REWARDS]
)
def test_every_algo_and_reward_mode_updates_the_policy(tmp_path, algo, reward, first_copy_succeeds):
    cfg = small(tmp_path, algo=algo, reward=reward)
    policy, before, rows = run(cfg)
    after = policy.trainable_parameters()
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True)), "no parameter changed"
    assert len(rows) == 2
    for row in rows:
        losses = {k: v for k, v in row.items() if k.startswith("loss/")}
        assert all(torch.isfinite(torch.tensor(float(v))) for v in losses.values()), losses
        assert row["rollout/episodes"] == 4 and row["loss/steps"] >= 1
        # no_signal="keep": every own turn is trained on; RSPO adds the replayed explorer turns
        assert row["loss/turns"] == row["rollout/turns"] + row.get("swap/turns", 0)
        assert row["adv/abs_mean"] > 0 and row["loss/grad_norm"] > 1e-4  # a real signal, not float noise
    samplers = 2 if cfg.uses_explorer else 1  # RSPO's explorer samples as many steps again
    assert rows[-1]["rollout/env_steps"] == samplers * sum(r["rollout/turns"] for r in rows)
    if algo == "ppo":
        assert rows[-1]["loss/value"] > 0.0
    saved = json.loads((cfg.run_dir / "config.json").read_text())
    assert saved["algo"] == algo and saved["reward"] == reward


def _strip_time(rows):
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]


@pytest.mark.slow
def test_same_seed_same_metrics_and_resume_ends_where_the_uninterrupted_run_ends(tmp_path):
    full = small(
        tmp_path, name="full", iterations=3, algo="gigpo", reward="dense", eval_every=3, eval_tasks=3
    )
    p_full, _, rows_full = run(full)
    again = small(
        tmp_path, name="again", iterations=3, algo="gigpo", reward="dense", eval_every=3, eval_tasks=3
    )
    _, _, rows_again = run(again)
    assert _strip_time(rows_full) == _strip_time(rows_again)

    # killed during iteration 3 (after the checkpoint of iteration 2), a metrics line half written
    part = small(
        tmp_path, name="part", iterations=3, algo="gigpo", reward="dense", eval_every=3, eval_tasks=3
    )
    original = Trainer.train_step

    def killed(self, it):
        if it == 2:
            with (self.run_dir / "metrics.jsonl").open("a") as f:
                f.write('{"iteration": 3, "rollout/succ')
            raise KeyboardInterrupt
        return original(self, it)

    Trainer.train_step = killed
    try:
        with pytest.raises(KeyboardInterrupt):
            run(part)
    finally:
        Trainer.train_step = original
    resumed = small(
        tmp_path,
        name="part",
        iterations=3,
        algo="gigpo",
        reward="dense",
        eval_every=3,
        eval_tasks=3,
        resume=True,
    )
    p_res, _, rows_res = run(resumed)
    assert _strip_time(rows_res) == _strip_time(rows_full)
    # the cut line is gone from the file (the resume rewrote it), not skipped by every later read
    lines = (resumed.run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["iteration"] for line in lines] == [r["iteration"] for r in rows_full]
    for a, b in zip(p_full.trainable_parameters(), p_res.trainable_parameters(), strict=True):
        assert torch.equal(a, b)


def test_existing_run_is_not_overwritten_and_resume_checks_the_config(tmp_path):
    cfg = small(tmp_path, name="r", iterations=1)
    run(cfg)
    with pytest.raises(ValueError, match="already holds a run"):
        run(small(tmp_path, name="r", iterations=1))
    with pytest.raises(ValueError, match="config differs in lr"):
        run(small(tmp_path, name="r", iterations=2, lr=5e-4, resume=True))


def test_no_signal_groups_are_counted_and_skip_drops_them(tmp_path):
    # temperature 1 on an untrained model: near-greedy, every copy the same -> no signal under outcome reward
    cfg = small(tmp_path, name="ns", iterations=1, temperature=1.0, no_signal="skip", reward="outcome")
    _, before, rows = run(cfg)
    assert rows[0]["rollout/no_signal_groups"] == 2 and rows[0]["loss/steps"] == 0
    assert rows[0]["loss/turns"] == 0


def test_evaluation_reports_each_split(tmp_path):
    cfg = small(tmp_path, name="ev", iterations=1, eval_every=1, eval_tasks=2)
    _, _, rows = run(cfg)
    assert rows[0]["iteration"] == 0 and "eval/valid_seen/success" in rows[0]
    assert {"eval/success", "eval/score", "eval/valid_unseen/success"} <= set(rows[-1])


def test_cuda_request_without_cuda_is_a_clear_error(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(ValueError, match="no CUDA device"):
        Trainer(small(tmp_path, device="cuda"), policy=untrained_tiny_policy(0))


def test_generate_mode_trains_from_written_actions(tmp_path):
    """Generate mode end to end: one Trainer iteration runs; an update on hand-set rewards moves the policy."""
    from rspo.core.rewards import RewardSpec, compute_rewards
    from rspo.core.update import build_batch, ppo_update

    cfg = small(tmp_path, name="gen", iterations=1, action_mode="generate", max_new_tokens=6, temperature=1.0)
    policy = untrained_tiny_policy(0, action_mode="generate", max_new_tokens=6)
    trainer = Trainer(cfg, policy=policy)
    rows = trainer.run()
    assert rows[0]["rollout/invalid_frac"] > 0.5  # an untrained model writes no valid command
    episodes = trainer.rollout(7)
    assert all(
        t.action_ids and len(t.token_logprobs) == len(t.action_ids) for ep in episodes for t in ep.turns
    )
    for ep in episodes:  # pretend the first copy of each task succeeded
        ep.turns[-1].outcome_reward = 1.0 if ep.copy == 0 else 0.0
    batch = build_batch(episodes, compute_rewards("outcome", episodes, RewardSpec()), cfg)
    assert batch.adv.abs().sum() > 0
    before = [p.detach().clone() for p in policy.trainable_parameters()]
    stats = ppo_update(policy, trainer.optimizer, trainer.params, batch, cfg, 0, trainer.autocast)
    assert stats["loss/ratio_max"] == pytest.approx(1.0, abs=1e-3)  # behaviour log-probs match evaluate
    assert all(torch.isfinite(torch.tensor(v)) for k, v in stats.items() if k.startswith("loss/"))
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.trainable_parameters(), strict=True))


@pytest.mark.slow
def test_lora_path_trains_adapters_only_from_a_local_model(tmp_path):
    base = untrained_tiny_policy(0)
    base.save_pretrained(tmp_path / "tiny")
    cfg = small(
        tmp_path,
        name="lora",
        iterations=2,
        model=str(tmp_path / "tiny"),
        lora=True,
        reward="dense",
        misalignment=1.0,
    )
    trainer = Trainer(cfg)
    names = [n for n, _ in trainer.policy.named_trainable_parameters()]
    assert names and all("lora_" in n for n in names)
    before = {n: p.detach().clone() for n, p in trainer.policy.named_trainable_parameters()}
    rows = trainer.run()
    assert torch.isfinite(torch.tensor(rows[-1]["loss/policy"])) and sum(r["adv/abs_mean"] for r in rows) > 0
    after = dict(trainer.policy.named_trainable_parameters())
    assert any(not torch.equal(before[n], after[n]) for n in names)
    # the frozen base is untouched: the reference (adapters off) scores like the saved model
    prompt, cands = "You are an expert agent in a household. Your task is to: look.", ["look", "inventory"]
    ref = trainer.policy.candidate_logprobs([prompt], [cands], reference=True)
    fresh = untrained_tiny_policy(0).candidate_logprobs([prompt], [cands])
    assert torch.allclose(torch.as_tensor(ref[0]), torch.as_tensor(fresh[0]), atol=1e-5)


def test_distinct_successes_count_each_task_and_action_sequence_once():
    from rspo.core.explorer import success_keys
    from rspo.core.rollout import Episode, Turn

    def ep(task, actions, won):
        turns = [Turn("p", [a], a, 0, [], [0.0], "s", 0.0, 0.0, True) for a in actions]
        return Episode("shop", task, 0, 0, turns, won=won)

    keys = success_keys(
        [ep("t1", ["a", "b"], True), ep("t1", ["a", "b"], True), ep("t1", ["a", "c"], True)]
        + [ep("t2", ["a", "b"], True), ep("t2", ["x"], False)]
    )
    assert len(keys) == 3


@pytest.mark.slow
def test_task_pool_trains_on_a_fixed_pool_and_evaluates_it_apart(tmp_path):
    from rspo.core.trainer import pool_tasks

    everything = [f"train/{i:05d}" for i in range(100)]
    pool = pool_tasks(everything, 5)
    assert len(set(pool)) == 5 and set(pool) <= set(everything)
    assert pool_tasks(everything, 5) == pool  # the same pool for every run
    with pytest.raises(ValueError, match="1..100 tasks"):
        pool_tasks(everything, 101)
    cfg = small(tmp_path, name="pool", iterations=3, eval_every=3, eval_tasks=2, task_pool=3)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    assert trainer.train_tasks == pool_tasks(trainer.envs[0].task_ids, 3)
    drawn = {t for it in range(1, 4) for t in trainer.sample_tasks(it)}
    assert drawn <= set(trainer.train_tasks)
    rows = trainer.run()
    for row in (rows[0], rows[-1]):
        assert {"eval/pool/success", "eval/pool/score", "eval/pool/episode_len"} <= set(row)
        # the pool is reported apart: eval/success is still the valid splits' (2 tasks each)
        splits = [row[f"eval/{s}/success"] for s in ("valid_seen", "valid_unseen")]
        assert row["eval/success"] == pytest.approx(sum(splits) / 2)


@pytest.mark.parametrize("pool", [-1, 1])
def test_task_pool_smaller_than_an_iteration_is_a_config_error(pool):
    with pytest.raises(ValueError, match="task_pool"):
        TrainConfig(tasks_per_iter=2, task_pool=pool)


# --- the reward swap in the trainer (reward="rspo") -----------------------------------------------
SWAP_METRICS = {
    "explorer/success",
    "explorer/return",
    "explorer/process_return",
    "explorer/episode_len",
    "buffer/groups",
    "buffer/age_mean",
    "buffer/age_max",
    "swap/is_ratio_mean",
    "swap/is_ratio_max",
    "swap/truncated_frac",
}


def snapshot(policy):
    return {n: p.detach().clone() for n, p in policy.named_trainable_parameters()}


def changed(before, policy):
    after = dict(policy.named_trainable_parameters())
    return any(not torch.equal(before[n], after[n]) for n in before)


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["grpo", "ppo", "gigpo"])
def test_rspo_trains_learner_and_explorer_on_every_base_algo(tmp_path, algo, first_copy_succeeds):
    cfg = small(tmp_path, algo=algo, reward="rspo", iterations=3)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0, value_head=algo == "ppo"))
    learner, explorer = snapshot(trainer.policy), snapshot(trainer.explorer.policy)
    rows = trainer.run()
    assert changed(learner, trainer.policy) and changed(explorer, trainer.explorer.policy)
    for row in rows:
        assert SWAP_METRICS <= set(row)
        values = [v for k, v in row.items() if k.startswith(("loss/", "swap/", "explorer/"))]
        assert all(torch.isfinite(torch.tensor(float(v))) for v in values), row
        assert row["swap/is_ratio_max"] >= row["swap/is_ratio_mean"] > 0
    # both policies sample: twice the environment steps of the learner's own rollouts
    assert rows[-1]["rollout/env_steps"] > sum(r["rollout/turns"] for r in rows)
    assert rows[-1]["buffer/groups"] == min(cfg.buffer_groups, 2 * (cfg.buffer_max_age + 1))


@pytest.mark.slow
def test_mixed_and_schedule_variants(tmp_path, first_copy_succeeds):
    mixed = small(tmp_path, name="mixed", reward="rspo", swap_variant="mixed", algo="gigpo")
    rows = run(mixed)[2]
    assert all(r["swap/turns"] > 0 and "buffer/groups" not in r for r in rows)
    sched = small(tmp_path, name="sched", reward="rspo", swap_variant="schedule", iterations=4)
    trainer = Trainer(sched, policy=untrained_tiny_policy(0))
    assert trainer.explorer is None
    rows = trainer.run()
    assert [r["reward/dense"] for r in rows] == [1.0, 1.0, 0.0, 0.0]
    assert "explorer/success" not in rows[0]


@pytest.mark.slow
def test_rspo_resume_with_a_non_empty_buffer_ends_where_the_uninterrupted_run_ends(
    tmp_path, first_copy_succeeds
):
    def cfg(name, **kw):
        return small(tmp_path, name=name, algo="grpo", reward="rspo", iterations=3, **kw)

    full = Trainer(cfg("full"), policy=untrained_tiny_policy(0))
    rows_full = full.run()
    original = Trainer.train_step

    def killed(self, it):
        if it == 2:
            raise KeyboardInterrupt
        return original(self, it)

    Trainer.train_step = killed
    try:
        with pytest.raises(KeyboardInterrupt):
            Trainer(cfg("part"), policy=untrained_tiny_policy(0)).run()
    finally:
        Trainer.train_step = original
    state = torch.load(tmp_path / "part" / "checkpoint" / "state.pt", weights_only=True)
    assert len(state["extra"]["buffer"]) > 0 and state["extra"]["explorer"]
    resumed = Trainer(cfg("part", resume=True), policy=untrained_tiny_policy(0))
    rows_res = resumed.run()
    assert _strip_time(rows_res) == _strip_time(rows_full)
    for a, b in ((full.policy, resumed.policy), (full.explorer.policy, resumed.explorer.policy)):
        for (n, x), (_, y) in zip(
            a.named_trainable_parameters(), b.named_trainable_parameters(), strict=True
        ):
            assert torch.equal(x, y), n


@pytest.mark.slow
def test_lora_explorer_and_learner_are_two_adapters_on_one_base(tmp_path, first_copy_succeeds):
    untrained_tiny_policy(0).save_pretrained(tmp_path / "tiny")
    cfg = small(tmp_path, name="lora-rspo", model=str(tmp_path / "tiny"), lora=True, reward="rspo")
    trainer = Trainer(cfg)
    assert trainer.explorer.policy.model is trainer.policy.model  # one base model
    learner_names = [n for n, _ in trainer.policy.named_trainable_parameters()]
    explorer_names = [n for n, _ in trainer.explorer.policy.named_trainable_parameters()]
    assert learner_names and all(".default." in n for n in learner_names)
    assert len(explorer_names) == len(learner_names) and all(".explorer." in n for n in explorer_names)
    learner, explorer = snapshot(trainer.policy), snapshot(trainer.explorer.policy)
    trainer.run()
    assert changed(learner, trainer.policy) and changed(explorer, trainer.explorer.policy)
    # the reference is the base with adapters off, untouched by either adapter's training
    prompt, cands = "You are an expert agent in a household. Your task is to: look.", ["look", "inventory"]
    ref = trainer.explorer.policy.candidate_logprobs([prompt], [cands], reference=True)
    fresh = untrained_tiny_policy(0).candidate_logprobs([prompt], [cands])
    assert torch.allclose(ref[0], fresh[0], atol=1e-5)
    # the two adapters now differ, and each policy scores with its own
    a = trainer.policy.candidate_logprobs([prompt], [cands])[0]
    b = trainer.explorer.policy.candidate_logprobs([prompt], [cands])[0]
    assert not torch.allclose(a, b) and torch.equal(
        a, trainer.policy.candidate_logprobs([prompt], [cands])[0]
    )


def test_signal_selection_skips_replay_when_no_stored_group_has_signal(tmp_path):
    """The untrained model never succeeds: no explorer group has outcome signal, so the signal
    selection replays nothing where uniform selection replays (and scores) groups that train nothing."""
    rows = {}
    for select in ("uniform", "signal"):
        cfg = small(tmp_path, name=select, reward="rspo", replay_select=select, no_signal="skip")
        rows[select] = Trainer(cfg, policy=untrained_tiny_policy(0)).run()
    assert all(r["buffer/replayed_groups"] > 0 and r["swap/turns"] == 0 for r in rows["uniform"])
    assert all(r["buffer/replayed_groups"] == 0 and r["swap/turns"] == 0 for r in rows["signal"])


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(swap_variant="both"), "swap_variant"),
        (dict(swap_c=0.0), "swap_c"),
        (dict(swap_lambda=-1.0), "swap_lambda"),
        (dict(schedule_frac=1.5), "schedule_frac"),
        (dict(buffer_groups=0), "buffer_groups"),
        (dict(replay_select="fresh"), "replay_select"),
    ],
)
def test_swap_config_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(reward="rspo", **kw)


def test_matched_budget_splits_the_tasks_between_learner_and_explorer(tmp_path, first_copy_succeeds):
    """swap_budget="matched": the learner rolls out the first half of the iteration's draw and the
    explorer the second, so together they sample a baseline's episodes; "extra" doubles them."""
    seen: dict[str, list] = {}

    def runs(budget):
        cfg = small(tmp_path, name=budget, reward="rspo", swap_budget=budget, tasks_per_iter=4, iterations=2)
        trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
        rollout = trainer.rollout

        def spy(iteration, round_=0, policy=None, stream=2):
            episodes = rollout(iteration, round_, policy, stream)
            seen.setdefault(budget, []).append(
                (iteration, stream, sorted({ep.task_id for ep in episodes}), len(episodes))
            )
            return episodes

        trainer.rollout = spy
        return trainer.run(), trainer

    matched, trainer = runs("matched")
    base = small(tmp_path, name="base", tasks_per_iter=4, iterations=2)
    base_trainer = Trainer(base, policy=untrained_tiny_policy(0))
    for it in range(2):
        drawn = trainer.sample_tasks(it)  # the learner's half
        (learner, explorer) = [entry for entry in seen["matched"] if entry[0] == it]
        assert learner[2] == sorted(set(drawn)) and len(learner[2]) == 2 and learner[3] == 4
        assert explorer[1] == 5 and len(explorer[2]) == 2 and not set(explorer[2]) & set(learner[2])
        assert set(learner[2]) | set(explorer[2]) == set(base_trainer.sample_tasks(it))  # one draw, split
    extra, _ = runs("extra")
    assert all(entry[3] == 8 for entry in seen["extra"])  # 4 tasks x 2 copies, learner and explorer each
    # every environment step either policy takes is counted
    assert matched[-1]["rollout/env_steps"] == sum(
        r["rollout/turns"] + r["explorer/episode_len"] * 4 for r in matched
    )


def test_a_run_records_its_fingerprint_and_a_resume_under_another_adds_it(tmp_path, monkeypatch):
    from rspo.core import fingerprint

    cfg = small(tmp_path, iterations=2, checkpoint_every=1)
    Trainer(cfg, policy=untrained_tiny_policy(0)).run()
    data = json.loads((cfg.run_dir / "fingerprint.json").read_text())
    assert (
        data["packages"]["torch"] == torch.__version__.split("+")[0]
        or data["packages"]["torch"] == torch.__version__
    )
    # a policy handed in is not the warm start: its weights say what the run started from
    assert len(data["start"]["weights"]) == 12 and "warm_start" not in data["start"]
    assert "resumed" not in data
    # resumed under other packages: the new fingerprint is added, the first kept
    real = fingerprint.packages
    monkeypatch.setattr(fingerprint, "packages", lambda: {**real(), "torch": "0.0.1"})
    longer = small(tmp_path, iterations=3, checkpoint_every=1, resume=True)
    Trainer(longer, policy=untrained_tiny_policy(0)).run()
    again = json.loads((cfg.run_dir / "fingerprint.json").read_text())
    assert again["packages"] == data["packages"] and again["resumed"][0]["iteration"] == 2
    resumed = {k: v for k, v in again["resumed"][0].items() if k != "iteration"}
    assert fingerprint.differences(data, resumed) == [f"packages.torch: {data['packages']['torch']} -> 0.0.1"]


def _winning_tasks(tasks):
    """A reward mode wrapper: the first copy of each task in ``tasks`` succeeds at its last turn."""
    from rspo.core.registry import REWARD_MODES, RewardMode

    def wrap(real):
        def mode(episodes, spec):
            rewards = real(episodes, spec)
            for ep, r in zip(episodes, rewards, strict=True):
                if ep.copy == 0 and ep.task_id in tasks:
                    r[-1] += spec.outcome_scale
            return rewards

        return mode

    return REWARD_MODES.temporary(RewardMode("outcome", wrap(REWARD_MODES["outcome"].function)))


@pytest.mark.parametrize("round1_wins", [True, False])
def test_resample_replaces_groups_without_signal_and_counts_every_step(tmp_path, round1_wins):
    """no_signal="resample": a group whose copies all fail is replaced by a fresh task's group that has a
    win and a loss (numbered past the iteration's groups); every rollout drawn counts in env_steps, the
    discarded ones too."""
    cfg = small(tmp_path, no_signal="resample", resample_tries=2, reward="outcome")
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    round0, round1 = trainer.sample_tasks(0, 0), trainer.sample_tasks(0, 1)
    # the premise of the arithmetic below: later rounds draw other tasks than round 0's winner
    assert not set(round0) & set(round1) and round0[0] not in trainer.sample_tasks(0, 2)
    drawn = []
    rollout = trainer.rollout

    def recorded(*args, **kwargs):
        drawn.append(rollout(*args, **kwargs))
        return drawn[-1]

    trainer.rollout = recorded
    # round 0: task 0 has a win and a loss, task 1 none; round 1: both have one (when round1_wins)
    with _winning_tasks({round0[0], *(round1 if round1_wins else ())}):
        episodes, batch, extra = trainer.collect_iteration(0)
    rounds = 2 if round1_wins else 3  # without a win in round 1, round 2 is tried as well
    assert len(drawn) == rounds and trainer.env_steps == sum(len(ep) for eps in drawn for ep in eps)
    assert extra["rollout/no_signal_groups"] == 1
    if round1_wins:  # one group was missing: round 1's first good group joins as group 0 + 1 x 2
        assert sorted({ep.group for ep in episodes}) == [0, 2]
        assert {ep.task_id for ep in episodes} == {round0[0], round1[0]}
        assert extra["rollout/resampled_groups"] == 1 and batch.no_signal_groups == 0
    else:  # no fresh group had signal: the iteration trains on its good group alone
        assert sorted({ep.group for ep in episodes}) == [0] and extra["rollout/resampled_groups"] == 0
    # the batch is built from the kept episodes: its groups are theirs, its turns all of theirs
    assert sorted(set(batch.task_ids.tolist())) == sorted({ep.group for ep in episodes})
    assert len(batch.turns) == sum(len(ep) for ep in episodes)


def test_resample_numbers_each_fresh_group_apart(tmp_path):
    """Both of round 0's groups without signal, both of round 1's with: each joins under its own number
    (2 and 3), so that their advantages are normalised within each group, not over the two."""
    cfg = small(tmp_path, no_signal="resample", resample_tries=1, reward="outcome")
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    with _winning_tasks(set(trainer.sample_tasks(0, 1))):
        episodes, batch, extra = trainer.collect_iteration(0)
    assert sorted({ep.group for ep in episodes}) == [2, 3] and extra["rollout/resampled_groups"] == 2
    assert batch.no_signal_groups == 0 and sorted(set(batch.task_ids.tolist())) == [2, 3]


class _ExpertOn:
    """A scripted policy: the expert's move on the tasks in ``tasks``, another admissible move elsewhere
    (so it wins those tasks and, within a few steps, none of the others); it records ``greedy``."""

    needs_envs = True

    def __init__(self, tasks):
        self.tasks, self.greedy = set(tasks), []

    def act(self, prompts, candidates, *, greedy=False, temperature=1.0, generator=None, envs=None):
        from rspo.core.policies.base import ActionSample

        self.greedy.append(greedy)
        out = []
        for env, cands in zip(envs, candidates, strict=True):
            expert = env.expert_action()
            wrong = next((c for c in cands if c != expert), expert)
            action = expert if env.task_id in self.tasks else wrong
            choice = cands.index(action) if action in cands else None
            out.append(ActionSample(action, True, [], [0.0], choice, None, action))
        return out


def test_evaluate_reports_each_split_and_their_mean_weighed_by_episodes(tmp_path, monkeypatch):
    """eval/<split>/{success,score,episode_len} over the split's first eval_tasks tasks (0: all of them),
    eval/success and eval/score weighed by the splits' episodes (household: 140 and 134), the pool's
    training tasks apart (eval/pool/*), greedy, with the run's history and admissible-action setting.
    The expected values are worked out here from the very episodes the evaluation collected (a lost
    episode is given a partial score, as the shop's are, so success and score differ)."""
    import time

    import rspo.core.trainer as trainer_mod

    calls = []

    def recorded(policy, envs, task_ids, group_size, **kw):
        eps = collect(policy, envs, task_ids, group_size, **kw)
        for ep in eps:
            ep.score = 1.0 if ep.won else 0.25
        calls.append((envs[0].split, list(task_ids), kw, eps))
        return eps

    collect = trainer_mod.collect
    monkeypatch.setattr(trainer_mod, "collect", recorded)
    cfg = small(tmp_path, eval_tasks=0, task_pool=3, max_steps=30, history=1)  # steps enough to win
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    splits = {
        s: list(trainer_mod.make_envs("household", s, 1)[0].task_ids) for s in ("valid_seen", "valid_unseen")
    }
    wins = {t for ids in splits.values() for t in ids[::3]} | {trainer.train_tasks[0]}
    trainer.policy = _ExpertOn(wins)
    c0 = time.process_time()
    out = trainer.evaluate()
    cpu = time.process_time() - c0
    assert [c[0] for c in calls] == ["valid_seen", "valid_unseen", "train"]
    assert [c[1] for c in calls] == [splits["valid_seen"], splits["valid_unseen"], trainer.train_tasks]
    for _, _, kw, _ in calls:
        assert (
            kw["greedy"] is True and kw["history"] == 1 and kw["show_admissible"] == trainer.show_admissible
        )
    total = {"success": 0.0, "score": 0.0}
    for split, _, _, eps in calls[:2]:
        n = len(eps)
        success, score, length = (
            sum(e.won for e in eps) / n,
            100 * sum(e.score for e in eps) / n,
            sum(map(len, eps)) / n,
        )
        assert 0 < success < 1 and length > 1  # the numbers below can tell the fields apart
        assert out[f"eval/{split}/success"] == pytest.approx(success)
        assert out[f"eval/{split}/score"] == pytest.approx(score)
        assert out[f"eval/{split}/episode_len"] == pytest.approx(length)
        total["success"] += success * n
        total["score"] += score * n
    assert out["eval/success"] == pytest.approx(total["success"] / 274)
    assert out["eval/score"] == pytest.approx(total["score"] / 274)
    pool = calls[2][3]
    assert len(pool) == 3 and out["eval/pool/success"] == pytest.approx(1 / 3)
    assert out["eval/pool/score"] == pytest.approx(100 * (1 + 0.25 + 0.25) / 3)
    assert out["eval/pool/episode_len"] == pytest.approx(sum(map(len, pool)) / 3)
    assert 0 <= out["time/eval"] < 600 and 0 <= out["time/cpu_eval"] <= cpu
    assert sorted(trainer.eval_envs) == ["pool", "valid_seen", "valid_unseen"]
    assert [len(trainer.eval_envs[s]) for s in ("valid_seen", "valid_unseen", "pool")] == [140, 134, 3]
    # eval_tasks caps each split (the first tasks); the environments are built once and kept
    for cap, success in ((5, 2 / 5), (1, 1.0)):
        capped = Trainer(
            small(tmp_path, name=f"cap{cap}", eval_tasks=cap, max_steps=30), policy=untrained_tiny_policy(0)
        )
        capped.policy = _ExpertOn(wins)
        out = capped.evaluate()
        assert out["eval/valid_seen/success"] == pytest.approx(success)  # tasks 0 and 3 of the first 5
        assert [len(capped.eval_envs[s]) for s in ("valid_seen", "valid_unseen")] == [cap, cap]


def test_the_batch_pays_the_configured_reward_scale(tmp_path):
    from rspo.core.policies.scripted import EpsilonExpert

    trainer = Trainer(small(tmp_path, outcome_scale=3.0, max_steps=30), policy=untrained_tiny_policy(0))
    trainer.policy = EpsilonExpert(0.0)
    episodes = trainer.rollout(0)
    assert all(ep.won for ep in episodes)
    batch = trainer.batch(episodes, "outcome")
    assert batch.episode_returns.max().item() == pytest.approx(3.0)


def test_the_schedule_variant_trains_the_learner_on_dense_rewards_first(tmp_path):
    cfg = small(tmp_path, reward="rspo", swap_variant="schedule", iterations=4, schedule_frac=0.5)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    seen = []
    batch = trainer.batch
    trainer.batch = lambda episodes, reward: seen.append(reward) or batch(episodes, reward)
    for it in range(4):
        trainer.collect_iteration(it)
    assert seen == ["dense", "dense", "outcome", "outcome"]


def test_the_successes_found_survive_a_checkpoint(tmp_path):
    cfg = small(tmp_path, reward="rspo")
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    trainer.successes, trainer.explorer.successes = {"t1 a", "t2 b"}, {"t3 c"}
    extra = trainer.checkpoint_extra()
    assert extra["successes"] == ["t1 a", "t2 b"] and extra["explorer_successes"] == ["t3 c"]
    again = Trainer(cfg, policy=untrained_tiny_policy(0))
    again.load_checkpoint_extra(extra)
    assert again.successes == {"t1 a", "t2 b"} and again.explorer.successes == {"t3 c"}
    assert again.explorer.buffer.state() == trainer.explorer.buffer.state()
    again.load_checkpoint_extra({k: v for k, v in extra.items() if k != "explorer_successes"})
    assert again.explorer.successes == set()
    with pytest.raises(
        ValueError, match="^this checkpoint has no explorer state: it was not saved by an RSPO run$"
    ):
        again.load_checkpoint_extra({"successes": []})
    bad = {**extra, "explorer": {k: torch.zeros(1) for k in extra["explorer"]}}
    with pytest.raises(ValueError, match=r"checkpoint \(explorer\)"):
        again.load_checkpoint_extra(bad)
    plain = Trainer(small(tmp_path, name="plain"), policy=untrained_tiny_policy(0))
    plain.load_checkpoint_extra({})  # a checkpoint without the key: none found
    assert plain.successes == set()


def test_the_loops_first_row_progress_bar_and_given_first_evaluation(tmp_path, bars):
    """Row 0 is the first evaluation at 0 environment steps (the one given, when a benchmark evaluated
    the shared policy once); the terminal's bar counts iterations from where the run stands, named by
    the run, with the rollout's success and return after each."""
    given = {"eval/success": 0.125, "eval/score": 12.5}
    cfg = small(tmp_path, iterations=2, eval_every=2, eval_tasks=1, progress=True)
    rows = Trainer(cfg, policy=untrained_tiny_policy(0), initial_eval=given).run()
    assert rows[0] == {"iteration": 0, "rollout/env_steps": 0, **given}
    (bar,) = bars
    assert bar.kw == {"total": 2, "initial": 0, "desc": cfg.name, "unit": "it"}
    assert bar.updates == 2 and bar.closed
    assert bar.posts[0] == {
        "success": f"{rows[1]['rollout/success']:.2f}",
        "return": f"{rows[1]['reward/return']:.2f}",
    }
    assert bar.posts[1]["eval"] == f"{rows[2]['eval/success']:.2f}"  # evaluated at iteration 2
    resumed = small(tmp_path, iterations=3, eval_every=2, eval_tasks=1, progress=True, resume=True)
    Trainer(resumed, policy=untrained_tiny_policy(0)).run()
    assert bars[1].kw["initial"] == 2 and bars[1].updates == 1
    quiet = small(tmp_path, name="quiet", iterations=1, progress=False)
    Trainer(quiet, policy=untrained_tiny_policy(0)).run()
    lines = Trainer(small(tmp_path, name="lines", iterations=1), policy=untrained_tiny_policy(0))
    lines.progress_lines = True  # rspo train prints stage lines instead of a bar
    lines.run()
    assert len(bars) == 2
