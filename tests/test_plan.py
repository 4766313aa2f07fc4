"""`rspo train` on a laptop (issue 35, rspo.core.plan): sizes chosen by the machine unless a flag, the
--config file or --profile sets them; the plan, its estimate and the stage lines; the probe changes
no metric."""

from __future__ import annotations

import json

import pytest
import torch

from rspo import cli
from rspo.core import plan
from rspo.core.config import TrainConfig
from rspo.core.policies.tiny import untrained_tiny_policy

SMALL = ["--tasks-per-iter", "2", "--group-size", "2", "--max-steps", "2", "--eval-tasks", "1"]


def _config(argv, cuda: bool, monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    lines: list[str] = []
    args = cli.build_parser().parse_args(["train", *argv, "--out-dir", str(tmp_path)])
    return cli.train_config(args, lines.append), lines


def test_without_a_gpu_the_sizes_no_flag_set_are_the_quick_profiles(monkeypatch, tmp_path):
    argv = ["--env", "household", "--algo", "gigpo", "--reward", "rspo", "--iterations", "1"]
    cfg, lines = _config(argv, False, monkeypatch, tmp_path)
    assert (cfg.iterations, cfg.tasks_per_iter, cfg.group_size) == (1, 4, 2)  # the flag wins
    assert (cfg.max_steps, cfg.eval_tasks, cfg.threads) == (20, 32, 1)
    assert len(lines) == 1 and "no GPU" in lines[0] and "--tasks-per-iter 4" in lines[0]
    assert "1 iterations of 4 tasks x 2 copies, horizon 20, 32 evaluation tasks" in lines[0]
    assert "--iterations" not in lines[0]  # not chosen: the user set it
    # what else the config holds is TrainConfig's (the profile's other settings are not sizes)
    assert (cfg.kl_coef, cfg.no_signal) == (TrainConfig.kl_coef, TrainConfig.no_signal)


def test_on_a_gpu_trainconfigs_defaults_stay(monkeypatch, tmp_path):
    cfg, lines = _config(["--env", "household", "--reward", "rspo"], True, monkeypatch, tmp_path)
    for key in plan.SIZE_FIELDS:
        assert getattr(cfg, key) == getattr(TrainConfig, key), key
    assert lines == []
    # --device cpu on a GPU machine is a CPU run
    cfg, lines = _config(["--env", "household", "--device", "cpu"], True, monkeypatch, tmp_path)
    assert cfg.tasks_per_iter == 4 and len(lines) == 1


def test_flags_the_config_file_and_a_profile_win(monkeypatch, tmp_path):
    every = [f"--{k.replace('_', '-')}" for k in plan.SIZE_FIELDS]
    values = {"--max-steps": "7", "--threads": "1"}  # --threads is bounded by the machine's cores
    argv = [x for flag in every for x in (flag, values.get(flag, "3"))]
    cfg, lines = _config(argv, False, monkeypatch, tmp_path)
    assert lines == [] and (cfg.tasks_per_iter, cfg.max_steps) == (3, 7)
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"tasks_per_iter": 6, "eval_tasks": 5}))
    cfg, lines = _config(["--config", str(config)], False, monkeypatch, tmp_path)
    assert (cfg.tasks_per_iter, cfg.eval_tasks, cfg.group_size) == (6, 5, 2)
    assert "--tasks-per-iter" not in lines[0] and "--group-size 2" in lines[0]
    # --profile: the profile's settings under the flags, nothing chosen by the machine
    cfg, lines = _config(
        ["--profile", "cpu", "--env", "household", "--seed", "1"], False, monkeypatch, tmp_path
    )
    assert lines == []
    assert (cfg.iterations, cfg.tasks_per_iter, cfg.max_steps, cfg.kl_coef) == (8, 8, 20, 0.0)
    cfg, _ = _config(["--profile", "cpu", "--iterations", "2"], True, monkeypatch, tmp_path)
    assert (cfg.iterations, cfg.eval_tasks) == (2, 64)


def test_evaluations_and_durations():
    cfg = TrainConfig(iterations=25, eval_every=10, progress=False)
    assert plan.evaluations(cfg) == 4  # before, 10, 20, 25
    assert plan.evaluations(cfg, start=20) == 1
    assert plan.evaluations(TrainConfig(eval_every=0)) == 0
    assert [plan.duration(s) for s in (4.4, 65, 3725)] == ["4 s", "1 min 05 s", "1 h 02 min"]


def _train(argv, tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(
        "rspo.core.trainer.load_policy",
        lambda cfg, device=None: untrained_tiny_policy(0, value_head=cfg.critic),
    )
    lines: list[str] = []
    args = cli.build_parser().parse_args(["train", *argv, "--out-dir", str(tmp_path)])
    assert cli.train(args, write=lines.append) == 0
    rows = [json.loads(x) for x in (tmp_path / args.name / "metrics.jsonl").read_text().splitlines()]
    return lines, [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]


ARGV = ["--env", "household", "--algo", "gigpo", "--reward", "rspo", "--iterations", "1", *SMALL]


def test_rspo_train_prints_its_plan_first_then_stage_lines_with_an_eta(tmp_path, monkeypatch, one_thread):
    monkeypatch.setattr(plan, "EVERY", 0.0)  # a stage line at every look
    monkeypatch.setattr(plan, "TICK", 0.02)
    lines, _ = _train([*ARGV, "--name", "shown"], tmp_path, monkeypatch)
    text = "\n".join(lines)
    assert text.index("plan: shown") < text.index("iteration 1/1 in")  # the plan comes first
    assert "an iteration: 8 episodes (4 learner + 4 explorer" in text and "estimate: about" in text
    assert "2 evaluation(s) of 2 greedy episodes" in text  # one task of each evaluation split
    assert "evaluation before training: success" in text
    assert "| ETA " in text and ": update for " in text  # a stage line while the update ran


@pytest.mark.slow
def test_the_probe_and_the_lines_change_no_metric(tmp_path, monkeypatch, one_thread):
    _, shown = _train([*ARGV, "--name", "shown"], tmp_path, monkeypatch)
    _, quiet = _train([*ARGV, "--name", "quiet", "--no-progress"], tmp_path, monkeypatch)
    assert shown == quiet
