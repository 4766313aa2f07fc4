"""The trainer's small decisions, each on its own (no training; fast): the device and precision a config
resolves to, whether prompts list the admissible actions, which tasks each process and each half of a
matched budget rolls out, the random stream of a rollout, and what a process refuses at construction
(issue 33 item 6: mutants of these that the fast suite let through)."""

from __future__ import annotations

import contextlib
import random
import time
from types import SimpleNamespace

import pytest
import torch
from test_trainer import small

import rspo.core.trainer as trainer_mod
from rspo.core.atomic import RunLock, RunLockedError
from rspo.core.checkpoint import read_checkpoint
from rspo.core.distributed import merge_metrics
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.streams import (
    STREAM_EXPLORER,
    STREAM_INIT,
    STREAM_ITERATION,
    STREAM_ROLLOUT,
    STREAM_TASKS,
    derive,
)
from rspo.core.trainer import Trainer, resolve_device, resolve_show_admissible

pytestmark = pytest.mark.usefixtures("one_thread")


class FakeDist:
    """A process ``rank`` of ``world`` as the trainer sees it, without collectives."""

    def __init__(self, world: int, rank: int = 0):
        self.world, self.rank, self.local_rank = world, rank, rank

    active = property(lambda self: self.world > 1)
    main = property(lambda self: self.rank == 0)

    def device(self, cuda: bool) -> torch.device:
        return torch.device(f"cuda:{self.local_rank}" if cuda else "cpu")

    def share(self, items):
        return items[self.rank :: self.world]

    def gather(self, obj):
        return [obj] * self.world

    def barrier(self):
        pass


# --- resolve_device ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("device", "precision", "cuda", "expect"),
    [
        ("auto", "auto", False, ("cpu", None)),
        ("auto", "auto", True, ("cuda", torch.bfloat16)),  # GPU: bf16 autocast by default
        ("cpu", "auto", True, ("cpu", None)),  # asked for the CPU on a GPU machine
        ("cuda", "auto", True, ("cuda", torch.bfloat16)),
        ("cuda", "fp32", True, ("cuda", None)),
        ("auto", "bf16", False, ("cpu", torch.bfloat16)),  # bf16 asked for on a CPU
        ("cpu", "fp32", False, ("cpu", None)),
    ],
)
def test_the_device_and_autocast_dtype_a_config_resolves_to(monkeypatch, device, precision, cuda, expect):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    cfg = SimpleNamespace(device=device, precision=precision)
    got, dtype = resolve_device(cfg)
    assert (got.type, dtype) == expect
    assert got.index is None  # one process: the default GPU
    got, _ = resolve_device(cfg, FakeDist(2, rank=1))  # under accelerate: this process's GPU
    assert str(got) == ("cuda:1" if expect[0] == "cuda" else "cpu")


def test_cuda_asked_for_without_a_gpu_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"^TrainConfig.device='cuda' but no CUDA device is available; use"):
        resolve_device(SimpleNamespace(device="cuda", precision="auto"))


def test_autocast_is_off_without_a_dtype_and_casts_with_one(tmp_path):
    trainer = Trainer(small(tmp_path), policy=untrained_tiny_policy(0))
    assert trainer.autocast_dtype is None and isinstance(trainer.autocast(), contextlib.nullcontext)
    trainer.autocast_dtype = torch.bfloat16
    with trainer.autocast():
        out = torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 3))
    assert out.dtype == torch.bfloat16


# --- resolve_show_admissible ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("show", "model", "env", "expect"),
    [
        ("yes", "", "household", True),
        ("no", "", "shop", False),
        ("no", "some/model", "shop", False),  # said outright: the model does not change it
        ("auto", "some/model", "household", True),  # a named model: listed
        ("auto", "", "household", False),  # the default policies: as they were warm-started
        ("auto", "", "shop", True),
    ],
)
def test_whether_prompts_list_the_admissible_actions(show, model, env, expect):
    cfg = SimpleNamespace(show_admissible=show, model=model, env=env)
    assert resolve_show_admissible(cfg) is expect


# --- the tasks of an iteration ----------------------------------------------------------------------------
def test_sample_tasks_draws_the_iterations_tasks_from_its_own_stream(tmp_path):
    trainer = Trainer(small(tmp_path, tasks_per_iter=4, seed=3), policy=untrained_tiny_policy(0))
    for it, round_ in [(0, 0), (2, 0), (2, 1)]:
        rng = random.Random(derive(3, STREAM_TASKS, it, round_))
        assert trainer.sample_tasks(it, round_) == rng.sample(trainer.train_tasks, 4)
    assert trainer.sample_tasks(0, 0, explorer=True) == trainer.sample_tasks(0, 0)  # both roll out all


def test_a_matched_budget_splits_the_tasks_between_learner_and_explorer(tmp_path):
    cfg = small(tmp_path, tasks_per_iter=4, reward="rspo", swap_budget="matched")
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    assert (trainer.learner_tasks, trainer.local_tasks, len(trainer.envs)) == (2, 2, 2 * cfg.group_size)
    drawn = random.Random(derive(cfg.seed, STREAM_TASKS, 1, 0)).sample(trainer.train_tasks, 4)
    assert trainer.sample_tasks(1) == drawn[:2] and trainer.sample_tasks(1, explorer=True) == drawn[2:]


def test_each_process_rolls_out_its_share_and_refuses_an_uneven_split(tmp_path, monkeypatch):
    monkeypatch.setattr("rspo.core.distributed.Dist", lambda: FakeDist(2, rank=1))
    cfg = small(tmp_path, tasks_per_iter=4)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    assert (trainer.learner_tasks, trainer.local_tasks, len(trainer.envs)) == (4, 2, 2 * cfg.group_size)
    drawn = random.Random(derive(cfg.seed, STREAM_TASKS, 0, 0)).sample(trainer.train_tasks, 4)
    assert trainer.sample_tasks(0) == drawn[1::2]
    with pytest.raises(
        ValueError, match=r"tasks_per_iter=3 must be a multiple of the 2 processes \(each .* tasks\)$"
    ):
        Trainer(small(tmp_path, tasks_per_iter=3), policy=untrained_tiny_policy(0))
    matched = small(tmp_path, tasks_per_iter=6, reward="rspo", swap_budget="matched")
    with pytest.raises(
        ValueError, match=r"tasks_per_iter=6 must be .* of each half with swap_budget='matched'\)$"
    ):
        Trainer(matched, policy=untrained_tiny_policy(0))


def test_a_rollout_draws_from_its_streams_generator_and_the_processes_differ(tmp_path, monkeypatch):
    """The generator a rollout samples with: the run's seed, the stream (learner or explorer), the
    iteration and round, and the process's rank when there are several."""
    seen = []

    def collect(policy, envs, tasks, group_size, **kw):
        seen.append((policy, tasks, group_size, kw))
        return []

    monkeypatch.setattr(trainer_mod, "collect", collect)
    cfg = small(tmp_path, seed=5, history=3, temperature=7.0, group_size=3)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    other = object()
    trainer.rollout(2, 1)
    trainer.rollout(2, 1, policy=other, stream=STREAM_EXPLORER)
    (p0, tasks0, g0, kw0), (p1, tasks1, _, kw1) = seen
    assert p0 is trainer.policy and p1 is other and g0 == 3 and tasks0 == trainer.sample_tasks(2, 1) == tasks1
    assert (kw0["history"], kw0["temperature"], kw0["show_admissible"]) == (3, 7.0, trainer.show_admissible)

    def first(generator):
        return torch.rand(3, generator=generator)

    expect = torch.Generator().manual_seed(derive(5, STREAM_ROLLOUT, 2, 1))
    assert torch.equal(first(kw0["generator"]), first(expect))
    expect = torch.Generator().manual_seed(derive(5, STREAM_EXPLORER, 2, 1))
    assert torch.equal(first(kw1["generator"]), first(expect))
    trainer.dist = FakeDist(2, rank=1)
    trainer.rollout(2, 1)
    expect = torch.Generator().manual_seed(derive(5, STREAM_ROLLOUT, 2, 1, 1))
    assert torch.equal(first(seen[-1][3]["generator"]), first(expect))


def test_seed_iteration_seeds_torch_from_the_runs_seed_and_the_iteration(tmp_path):
    trainer = Trainer(small(tmp_path, seed=4), policy=untrained_tiny_policy(0))
    trainer.seed_iteration(3)
    got = torch.rand(2)
    torch.manual_seed(derive(4, STREAM_ITERATION, 3))
    assert torch.equal(got, torch.rand(2))


def test_construction_sets_threads_optimizer_and_the_explorer(tmp_path, monkeypatch):
    threads = []
    monkeypatch.setattr(torch, "set_num_threads", threads.append)
    cfg = small(
        tmp_path,
        threads=1,
        lr=0.25,
        weight_decay=0.125,
        outcome_scale=7.0,
        invalid_penalty=-0.5,
        process_weight=0.25,
    )
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    assert (trainer.spec.outcome_scale, trainer.spec.invalid_penalty, trainer.spec.process_weight) == (
        7.0,
        -0.5,
        0.25,
    )
    assert trainer.run_id is None  # set by prepare_run_dir: a checkpoint saved before records no run id
    assert threads == [1]
    group = trainer.optimizer.param_groups[0]
    assert isinstance(trainer.optimizer, torch.optim.AdamW) and (group["lr"], group["weight_decay"]) == (
        0.25,
        0.125,
    )
    assert [id(p) for p in group["params"]] == [id(p) for p in trainer.policy.trainable_parameters()]
    assert (trainer.iteration, trainer.env_steps, trainer.successes, trainer.explorer) == (0, 0, set(), None)
    assert trainer.run_dir == cfg.run_dir and trainer.log.path == cfg.run_dir / "metrics.jsonl"
    assert trainer.policy_given and len(trainer.envs) == cfg.tasks_per_iter * cfg.group_size
    Trainer(small(tmp_path, threads=0), policy=untrained_tiny_policy(0))
    assert threads == [1]  # threads=0: torch's own setting is left alone


# --- the loop's cadence, its clocks and its running counts ------------------------------------------------
def test_the_loops_cadence_clocks_and_running_counts(tmp_path, monkeypatch):
    """Three iterations, a checkpoint every 2 and an evaluation every 2: evaluations at 0, 2 and 3 (the
    last), checkpoints at 2 and 3 with each process's steps; every timing column a duration inside the
    run's; the distinct successes accumulated; the iteration handed to the update; reward/dense."""
    draws = iter([{"a", "b"}, {"b", "c"}, {"d"}])
    monkeypatch.setattr(trainer_mod, "success_keys", lambda episodes: next(draws))
    updates = []
    real_update = trainer_mod.ppo_update

    def ppo_update(*args, **kw):
        updates.append(args[5])
        return real_update(*args, **kw)

    monkeypatch.setattr(trainer_mod, "ppo_update", ppo_update)
    cfg = small(tmp_path, iterations=3, checkpoint_every=2, eval_every=2)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    evaluated, saved = [], []
    trainer.evaluate = lambda: evaluated.append(trainer.iteration) or {"eval/success": 0.25}
    trainer.save_checkpoint = lambda extra=None: saved.append((trainer.iteration, extra))
    t0 = time.perf_counter()
    rows = trainer.run()
    wall = time.perf_counter() - t0
    assert evaluated == [0, 2, 3] and [r["iteration"] for r in rows] == [0, 1, 2, 3]
    assert ["eval/success" in r for r in rows] == [True, False, True, True]
    assert [it for it, _ in saved] == [2, 3]
    steps = [r["rollout/env_steps"] for r in rows]
    assert [extra for _, extra in saved] == [
        {"env_steps_by_rank": [steps[2]]},
        {"env_steps_by_rank": [steps[3]]},
    ]
    assert updates == [0, 1, 2]
    assert [r["rollout/distinct_successes"] for r in rows[1:]] == [2, 3, 4] and trainer.successes == set(
        "abcd"
    )
    assert [r["reward/dense"] for r in rows[1:]] == [0.0, 0.0, 0.0]
    totals = [r["time/total"] for r in rows[1:]]
    assert totals == sorted(totals) and 0 < totals[-1] <= wall
    for r in rows[1:]:
        assert 0 < r["time/rollout"] + r["time/update"] <= r["time/iteration"] <= r["time/total"]
        assert 0 < r["time/cpu_iteration"] <= 2 * r["time/iteration"] + 0.5  # one thread (+ slack)


def test_reward_dense_marks_the_iterations_the_learner_saw_process_rewards(tmp_path):
    rows = Trainer(small(tmp_path, reward="dense", iterations=1), policy=untrained_tiny_policy(0)).run()
    assert [r["reward/dense"] for r in rows] == [1.0]


def test_the_schedule_variant_logs_reward_dense_for_its_dense_iterations_only(tmp_path, monkeypatch):
    """The schedule variant's learner trains on the dense reward for its first schedule_frac of the
    iterations: reward/dense is the iteration's own mode (1 for the first two of four, then 0)."""
    monkeypatch.setattr(Trainer, "update", lambda self, batch, it: {"loss/policy": 0.0})
    cfg = small(tmp_path, reward="rspo", swap_variant="schedule", iterations=4, schedule_frac=0.5)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    assert [trainer.train_step(it)["reward/dense"] for it in range(4)] == [1.0, 1.0, 0.0, 0.0]


# --- the terminal's bar, the checkpoint's extra, the processes' merged row --------------------------------
def test_the_bar_shows_the_explorers_rollout_success_when_the_row_has_one(tmp_path, bars):
    rows = iter(
        [
            {"rollout/success": 0.25, "reward/return": 0.5, "explorer/success": 0.375},
            {"rollout/success": 0.5, "reward/return": 1.0, "explorer/success": 0.625, "eval/success": 0.75},
        ]
    )
    trainer = Trainer(small(tmp_path, progress=True, eval_every=0), policy=untrained_tiny_policy(0))
    trainer.train_step = lambda it: dict(next(rows))
    trainer.save_checkpoint = lambda extra=None: None
    trainer.run()
    assert bars[0].posts == [
        {"success": "0.25", "return": "0.50", "explorer": "0.38"},
        {"success": "0.50", "return": "1.00", "explorer": "0.62", "eval": "0.75"},
    ]


def test_every_checkpoint_records_both_runs_successes_the_explorers_empty_without_one(tmp_path):
    trainer = Trainer(small(tmp_path), policy=untrained_tiny_policy(0))
    trainer.successes = {"t2 b", "t1 a"}
    assert trainer.checkpoint_extra() == {"successes": ["t1 a", "t2 b"], "explorer_successes": []}


def test_with_several_processes_a_step_returns_the_row_merged_over_them(tmp_path, monkeypatch):
    """Each process's row gathered and merged (counts added, rates averaged); one process: its own row."""
    monkeypatch.setattr(Trainer, "update", lambda self, batch, it: {"loss/policy": 0.5})
    trainer = Trainer(small(tmp_path, tasks_per_iter=4), policy=untrained_tiny_policy(0))
    alone = trainer.train_step(0)
    assert alone["rollout/env_steps"] == trainer.env_steps  # one process: nothing merged

    def peer(row):  # the other process: three times the steps, half the return
        return {**row, "rollout/env_steps": 3 * row["rollout/env_steps"], "reward/return": 0.5}

    gathered = []

    class TwoProcesses(FakeDist):
        def gather(self, obj):
            gathered.append(obj)
            return [obj, peer(obj)]

    trainer.dist = TwoProcesses(2)
    merged = trainer.train_step(1)
    (own,) = gathered
    assert own["iteration"] == 2 and merged == merge_metrics([own, peer(own)])
    assert merged["rollout/env_steps"] == 4 * own["rollout/env_steps"]
    assert merged["reward/return"] == pytest.approx((own["reward/return"] + 0.5) / 2)


# --- what each step hands on: the lock, the seeds, the device, the policy, the update's arguments ----------
def test_the_main_process_holds_the_runs_lock_and_the_others_do_not(tmp_path):
    trainer = Trainer(small(tmp_path), policy=untrained_tiny_policy(0))
    trainer._run = lambda: ["ran"]
    with RunLock(trainer.run_dir):  # another training of the same folder holds it
        with pytest.raises(RunLockedError):
            trainer.run()
        trainer.dist = FakeDist(2, rank=1)  # a second process of this run does not take it
        assert trainer.run() == ["ran"]


def test_the_loop_seeds_each_iteration_and_only_the_main_process_returns_the_rows(tmp_path):
    trainer = Trainer(small(tmp_path, iterations=3), policy=untrained_tiny_policy(0))
    seeded = []
    trainer.seed_iteration = seeded.append
    assert [r["iteration"] for r in trainer.run()] == [1, 2, 3] and seeded == [0, 1, 2]
    other = Trainer(small(tmp_path, name="other", iterations=1), policy=untrained_tiny_policy(0))
    other.dist = FakeDist(2, rank=1)
    other.log.write({"iteration": 1})  # the main process's rows in the shared folder
    other.train_step = lambda it: {"rollout/success": 0.0, "reward/return": 0.0}
    assert other.run() == []


def test_construction_resolves_the_device_for_this_process_seeds_and_loads_the_named_policy(
    tmp_path, monkeypatch
):
    got, seeds = [], []
    monkeypatch.setattr("rspo.core.distributed.Dist", lambda: FakeDist(1))
    monkeypatch.setattr(
        trainer_mod, "resolve_device", lambda cfg, dist: got.append(dist) or (torch.device("cpu"), None)
    )
    tiny = untrained_tiny_policy(0)
    real_seed = torch.manual_seed
    monkeypatch.setattr(torch, "manual_seed", lambda s: seeds.append(s) or real_seed(s))
    monkeypatch.setattr(trainer_mod, "load_policy", lambda cfg, device: got.append((cfg, device)) or tiny)
    cfg = small(tmp_path, seed=6, show_admissible="yes")
    trainer = Trainer(cfg)
    assert got == [trainer.dist, (cfg, trainer.device)] and seeds[0] == derive(6, STREAM_INIT)
    assert trainer.policy is tiny and not trainer.policy_given and trainer.show_admissible is True


def test_autocast_casts_to_the_resolved_dtype_not_the_devices_default(tmp_path):
    trainer = Trainer(small(tmp_path), policy=untrained_tiny_policy(0))
    trainer.autocast_dtype = torch.float16  # the CPU's own autocast default is bfloat16
    with trainer.autocast():
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float16


def test_the_trainers_save_and_update_hand_on_their_arguments(tmp_path, monkeypatch):
    trainer = Trainer(small(tmp_path), policy=untrained_tiny_policy(0))
    trainer.save_checkpoint(extra={"env_steps_by_rank": [5, 7]})
    assert read_checkpoint(trainer.run_dir / "checkpoint" / "state.pt")["extra"]["env_steps_by_rank"] == [
        5,
        7,
    ]
    calls = []
    monkeypatch.setattr(trainer_mod, "ppo_update", lambda *a, **kw: calls.append((a, kw)) or {})
    batch = object()
    trainer.update(batch, 3)
    ((args, kw),) = calls
    assert args[0] is trainer.policy and args[1] is trainer.optimizer and args[2] is trainer.params
    assert args[3:] == (batch, trainer.cfg, 3, trainer.autocast, trainer.dist) and kw == {
        "cache_reference": True
    }


# --- the task pool and the policy a config names -----------------------------------------------------------
def test_a_task_pool_is_one_fixed_draw_per_size_and_refuses_a_size_outside_the_tasks():
    tasks = [f"t{i}" for i in range(10)]
    pool = trainer_mod.pool_tasks(tasks, 4)
    assert pool == random.Random(trainer_mod.POOL_SEED).sample(tasks, 4) and pool == trainer_mod.pool_tasks(
        tasks, 4
    )
    assert sorted(trainer_mod.pool_tasks(tasks, 10)) == tasks and len(trainer_mod.pool_tasks(tasks, 1)) == 1
    for n in (0, 11, -1):
        with pytest.raises(ValueError, match=rf"^a task pool holds 1\.\.10 tasks, got {n}$"):
            trainer_mod.pool_tasks(tasks, n)


def test_load_policy_builds_the_warm_start_or_the_named_model_with_the_configs_settings(
    tmp_path, monkeypatch
):
    import rspo.core.policies
    import rspo.core.sft

    calls = []
    monkeypatch.setattr(
        rspo.core.sft, "load_or_build_default", lambda env, **kw: calls.append((env, kw)) or "tiny"
    )
    monkeypatch.setattr(rspo.core.sft, "default_config", lambda env, options: ("config", env, options))
    monkeypatch.setattr(
        rspo.core.policies.LMPolicy, "from_pretrained", lambda name, **kw: calls.append((name, kw)) or "lm"
    )
    common = dict(max_prompt_tokens=321, max_new_tokens=17, micro_batch=5)
    device = torch.device("cpu")
    cfg = small(tmp_path, algo="ppo", **common)
    assert trainer_mod.load_policy(cfg, device) == "tiny"
    shared = dict(action_mode=cfg.action_mode, value_head=True, **common)
    assert calls.pop() == ("household", dict(config=None, device=device, **shared))
    opts = small(tmp_path, env="detour", env_options={"length": 5}, **common)
    trainer_mod.load_policy(opts)
    _, kw = calls.pop()
    assert kw["config"] == ("config", "detour", {"length": 5}) and kw["device"] is None
    assert kw["value_head"] is False
    named = small(tmp_path, model="/models/m", gguf_file="m.gguf", lora=True, **common)
    assert trainer_mod.load_policy(named, device) == "lm"
    name, kw = calls.pop()
    assert name == "/models/m" and kw == dict(lora=True, gguf_file="m.gguf", device=device, **shared) | {
        "value_head": False
    }
    trainer_mod.load_policy(small(tmp_path, model="/models/m", **common))
    assert calls.pop()[1]["gguf_file"] is None  # no GGUF file named: none passed on
