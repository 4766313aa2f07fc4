"""rspo.study.experiments: run configs from profiles (grids, ablations), training a run once and finding it
finished, training several at a time, the cached initial evaluation. The runs' loading and tables:
tests/test_analysis.py; the profiles per environment: tests/test_registry.py."""

from __future__ import annotations

import json

import pytest
from test_analysis import fake_run

from rspo.core.config import TrainConfig


def test_ensure_run_trains_then_reuses_and_refuses_a_different_config(tmp_path, one_thread):
    from test_trainer import small

    from rspo.core.policies.tiny import untrained_tiny_policy
    from rspo.study.experiments import ensure_run

    cfg = small(tmp_path, env="shop", iterations=1, max_steps=3, eval_every=1, eval_tasks=2, temperature=1.0)
    run = ensure_run(cfg, policy=untrained_tiny_policy(0))
    assert run.finished and [r["iteration"] for r in run.rows] == [0, 1]
    again = ensure_run(cfg)  # finished: loaded, not retrained (no policy needed)
    assert again.rows == run.rows
    with pytest.raises(ValueError, match="config differs in lr"):
        ensure_run(TrainConfig(**{**cfg.to_dict(), "lr": 0.5}))


def test_finished_run_without_training_none_for_missing_and_partial_runs(tmp_path):
    from tiny_fixtures import file_snapshot

    from rspo.study.experiments import ensure_run, finished_run, gather_runs

    def cfg(seed, **kw):  # the config fake_run saves, changed by kw
        kw = {"env": "shop", "algo": "grpo", "reward": "outcome", "iterations": 2, **kw}
        return TrainConfig(seed=seed, out_dir=str(tmp_path), **kw)

    assert finished_run(cfg(0)) is None and ensure_run(cfg(0), train=False) is None
    assert list(tmp_path.iterdir()) == []  # no run folder, no cached initial evaluation
    fake_run(tmp_path, 0, 0.5, finished=False)  # cut short
    fake_run(tmp_path, 1, 0.5)
    before = file_snapshot(tmp_path)
    assert finished_run(cfg(0)) is None and ensure_run(cfg(0), train=False) is None
    run = finished_run(cfg(1))
    assert run is not None and run.finished and run.rows[-1]["eval/success"] == 0.5
    assert ensure_run(cfg(1), train=False).rows == run.rows
    assert finished_run(cfg(1, iterations=3)) is None  # finished at 2 of 3 iterations: not this run
    with pytest.raises(ValueError, match="config differs in lr"):
        finished_run(cfg(1, lr=0.5))
    # the same folder under another spelling (a relative path, or a run restored from elsewhere)
    saved = tmp_path / cfg(1).name / "config.json"
    saved.write_text(saved.read_text().replace(str(tmp_path), "/elsewhere/runs"))
    before = file_snapshot(tmp_path)
    assert finished_run(cfg(1)).rows == run.rows
    with pytest.raises(ValueError, match="config differs in lr"):
        ensure_run(cfg(0, lr=0.5), train=False)
    assert file_snapshot(tmp_path) == before  # nothing written
    runs, missing = gather_runs([cfg(0), cfg(1), cfg(2)], train=False)
    assert [r.config.seed for r in runs] == [1] and missing == [cfg(0).name, cfg(2).name]
    assert file_snapshot(tmp_path) == before


def test_grid_configs_are_seed_major_with_overrides(tmp_path):
    from rspo.study.experiments import grid_configs

    configs = grid_configs(
        "smoke", tmp_path, ["household", "shop"], ["grpo"], ["outcome", "rspo"], [0, 1], lr=0.5
    )
    assert [c.name for c in configs[:4]] == [
        "household-grpo-outcome-s0",
        "household-grpo-rspo-s0",
        "shop-grpo-outcome-s0",
        "shop-grpo-rspo-s0",
    ]
    assert [c.seed for c in configs] == [0] * 4 + [1] * 4 and {c.lr for c in configs} == {0.5}
    assert configs[0].max_steps == 6 and configs[2].max_steps == 4  # per-env profile settings


def test_ablation_configs_are_grpo_rspo_named_by_the_change(tmp_path):
    from dataclasses import replace

    from rspo.study.analysis import method_name
    from rspo.study.experiments import ablation_configs, run_config

    configs = ablation_configs(
        "smoke", tmp_path, ["shop"], [{"swap_variant": "mixed"}, {"swap_lambda": 0.5}], [0]
    )
    assert [c.name for c in configs] == [
        "shop-grpo-rspo-swap_variant=mixed-s0",
        "shop-grpo-rspo-swap_lambda=0.5-s0",
    ]
    assert [method_name(c) for c in configs] == ["rspo-mixed", "rspo λ=0.5"]
    # the budget-matched form is a method of its own in tables (aggregate groups by this name)
    matched = run_config("quick", "detour", "grpo", "rspo", 0, tmp_path)
    assert (
        method_name(matched) == "rspo-matched"
        and method_name(replace(matched, swap_budget="extra")) == "rspo"
    )
    assert {(c.algo, c.reward) for c in configs} == {("grpo", "rspo")}


@pytest.mark.slow  # needs a warm start (detour's, as the reproduce test): minutes on a fresh machine
def test_finished_run_of_a_trained_smoke_run(tmp_path, one_thread):
    from rspo.study.experiments import ensure_run, finished_run, run_config

    cfg = run_config("smoke", "detour", "grpo", "outcome", 0, tmp_path)
    assert finished_run(cfg) is None
    run = ensure_run(cfg)
    assert run.finished and finished_run(cfg).rows == run.rows
    assert ensure_run(cfg, train=False).rows == run.rows


@pytest.mark.slow
def test_runs_trained_two_at_a_time_equal_runs_trained_one_by_one(tmp_path, one_thread):
    from rspo.study.experiments import ensure_run, grid_configs, train_runs

    def grid(where):
        return grid_configs("smoke", where, ["detour"], ["grpo"], ["outcome", "dense"], [0])

    lines = []
    train_runs(grid(tmp_path / "parallel"), workers=2, write=lines.append, every=1.0)
    assert lines[0].startswith("training 2 runs, 2 at a time")
    assert sum(line.startswith(("[1/2]", "[2/2]")) for line in lines) == 2
    for par, seq in zip(grid(tmp_path / "parallel"), grid(tmp_path / "sequential"), strict=True):
        a, b = ensure_run(par, train=False), ensure_run(seq)
        assert a is not None and a.finished
        strip = [{k: v for k, v in r.items() if not k.startswith("time/")} for r in a.rows]
        assert strip == [{k: v for k, v in r.items() if not k.startswith("time/")} for r in b.rows]
    lines.clear()
    train_runs(grid(tmp_path / "parallel"), workers=2, write=lines.append)  # all finished: nothing to do
    assert lines == []


def test_weights_fingerprint_tells_policies_apart():
    import torch

    from rspo.core.policies.tiny import untrained_tiny_policy
    from rspo.study.experiments import weights_fingerprint

    a, b = untrained_tiny_policy(0), untrained_tiny_policy(0)
    assert weights_fingerprint(a) == weights_fingerprint(b)
    assert weights_fingerprint(untrained_tiny_policy(1)) != weights_fingerprint(a)
    with torch.no_grad():
        next(b.model.parameters()).view(-1)[0] += 1e-6  # one float in the last bits
    assert weights_fingerprint(b) != weights_fingerprint(a)


@pytest.mark.slow  # needs a warm start (detour's, as the reproduce test): minutes on a fresh machine
def test_initial_eval_is_cached_per_starting_weights(tmp_path, one_thread):
    """A cached initial evaluation is reused only for the weights it evaluated: one restored from
    another machine's (differently built) warm start is evaluated again, not taken over."""
    from rspo.study.experiments import initial_eval, run_config

    cfg = run_config("smoke", "detour", "grpo", "outcome", 0, tmp_path)
    first = initial_eval(cfg)
    cache = tmp_path / "initial-detour.json"
    (entry,) = json.loads(cache.read_text())
    assert len(entry["key"]["weights"]) == 12 and entry["eval"] == first
    entry["eval"]["eval/success"] = 0.99  # marks a reuse
    cache.write_text(json.dumps([entry]))
    assert initial_eval(cfg)["eval/success"] == 0.99
    entry["key"]["weights"] = "0" * 12  # the same settings, other weights
    cache.write_text(json.dumps([entry]))
    assert initial_eval(cfg)["eval/success"] == first["eval/success"]
    assert [e["key"]["weights"] for e in json.loads(cache.read_text())][0] == "0" * 12  # kept beside


@pytest.mark.slow
def test_a_run_continued_past_the_asked_length_is_read_cut_there_and_never_rewritten(tmp_path, one_thread):
    """A grid asked at 2 iterations after its run was continued to 4 (the lab's equal-steps baselines):
    the run is read as it was at 2, and config.json and metrics.jsonl are left as they are."""
    from test_trainer import small
    from tiny_fixtures import file_snapshot

    from rspo.core.policies.tiny import untrained_tiny_policy
    from rspo.study.experiments import ensure_run, finished_run

    settings = dict(env="shop", max_steps=3, eval_every=2, eval_tasks=2, temperature=1.0)
    short = small(tmp_path, iterations=2, **settings)
    ensure_run(short, policy=untrained_tiny_policy(0))
    longer = small(tmp_path, iterations=4, **settings)
    full = ensure_run(longer, policy=untrained_tiny_policy(0))
    assert full.rows[-1]["iteration"] == 4
    before = file_snapshot(tmp_path)
    again = ensure_run(short)
    assert file_snapshot(tmp_path) == before  # nothing resumed, nothing rewritten
    assert again.config.iterations == 2 and [r["iteration"] for r in again.rows] == [0, 1, 2]
    assert again.rows == full.rows[:3] and finished_run(longer).rows == full.rows


def test_training_order_takes_each_seeds_rspo_runs_first_and_keeps_the_rest_in_order(tmp_path):
    from rspo.study.experiments import grid_configs, training_order

    grid = grid_configs("smoke", tmp_path, ["detour"], ["grpo"], ["outcome", "dense", "rspo"], [1, 0])
    assert [(c.seed, c.reward) for c in training_order(grid)] == [
        (1, "rspo"),
        (1, "outcome"),
        (1, "dense"),
        (0, "rspo"),
        (0, "outcome"),
        (0, "dense"),
    ]
    assert training_order([]) == []


def test_one_worker_says_what_runs_while_a_run_trains(tmp_path, monkeypatch):
    """train_runs with one worker writes a line every `every` seconds while a run trains (a run takes
    minutes: a terminal silent that long looks hung), then the run's finished line."""
    import time

    from rspo.study import experiments
    from rspo.study.analysis import Run

    cfg = experiments.run_config("smoke", "detour", "grpo", "outcome", 0, tmp_path)
    rows = [{"iteration": 0, "eval/success": 0.0}, {"iteration": 2, "eval/success": 0.5}]
    monkeypatch.setattr(experiments, "finished_run", lambda c: None)
    monkeypatch.setattr(experiments, "ensure_run", lambda c: time.sleep(0.35) or Run(None, c, rows))
    lines = []
    experiments.train_runs([cfg], workers=1, write=lines.append, every=0.1)
    assert lines[0] == f"[1/1] training {tmp_path.name}/{cfg.name} ..."
    beats = [line for line in lines[1:-1] if "s: running" in line]
    assert len(beats) >= 2 and all(f"{tmp_path.name}/{cfg.name} (iteration 0/2)" in b for b in beats)
    assert lines[-1].startswith(f"[1/1] {tmp_path.name}/{cfg.name}") and "50.0%" in lines[-1]


def test_the_initial_evaluation_of_any_run_is_an_outcome_grpo_probe():
    """Every run's config gives a valid probe, RSPO's budget-matched form too (its swap_budget alone
    would be an error on an outcome run), with the evaluation settings unchanged."""
    from rspo.study import study2
    from rspo.study.experiments import EVAL_KEYS, probe_config

    for cfg in study2.rspo_configs("runs/x", study2.find_setting("L7-m0.15-ms1")):
        probe = probe_config(cfg)
        assert (probe.algo, probe.reward, probe.swap_budget) == ("grpo", "outcome", "extra")
        assert all(getattr(probe, k) == getattr(cfg, k) for k in EVAL_KEYS + ("env_options",))


def test_the_quick_profile_lab_is_study_2s_chosen_setting():
    """make reproduce trains, at seeds 0 and 1, the very runs study 2 made at its chosen setting:
    every TrainConfig field but the seed and the folder equal (outcome without the process reward's
    knobs, RSPO in its budget-matched form at the baselines' 60 iterations)."""
    import dataclasses

    from rspo.study import study2
    from rspo.study.experiments import run_config

    setting = study2.find_setting(study2.CHOSEN)
    for reward, overrides in (("outcome", {}), ("dense", {}), ("rspo", {"swap_budget": "matched"})):
        quick = run_config("quick", "detour", "grpo", reward, 0, "runs/q")
        study = study2._config("runs/s", "rspo", setting, "grpo", reward, 0, **overrides)
        differ = {
            f.name
            for f in dataclasses.fields(quick)
            if getattr(quick, f.name) != getattr(study, f.name) and f.name not in ("out_dir",)
        }
        assert not differ, (reward, {k: (getattr(quick, k), getattr(study, k)) for k in differ})
        assert quick.iterations == 60 and quick.name == study.name
    assert run_config("quick", "detour", "grpo", "rspo", 0, "runs/q").swap_budget == "matched"
    # the other profiles' RSPO keeps the default form; a by_reward entry never reaches TrainConfig
    assert run_config("smoke", "detour", "grpo", "rspo", 0, "runs/q").swap_budget == "extra"
    assert run_config("quick", "detour", "grpo", "dense", 0, "runs/q").swap_budget == "extra"
