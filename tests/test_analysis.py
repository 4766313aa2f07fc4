"""Run loading, per-run summaries and the seed aggregation behind the results table."""

from __future__ import annotations

import json
import math

import pytest

from rspo.analysis import aggregate, load_runs, mean_std_ci, results_table, summarise, to_markdown
from rspo.config import TrainConfig


def fake_run(root, seed, final, reward="outcome", iterations=2, finished=True, cpu=False, initial=0.2):
    cfg = TrainConfig(
        env="shop", algo="grpo", reward=reward, seed=seed, iterations=iterations, out_dir=str(root)
    )
    cfg.run_dir.mkdir(parents=True)
    cfg.save(cfg.run_dir / "config.json")
    rows = [{"iteration": 0, "eval/success": initial, "eval/score": 40.0, "time/eval": 6.0}]
    rows.append({"iteration": 1, "rollout/env_steps": 100, "time/iteration": 30.0})
    if finished:
        rows.append(
            {
                "iteration": 2,
                "rollout/env_steps": 200,
                "eval/success": final,
                "eval/score": 50.0,
                "time/iteration": 24.0,
            }
        )
    if cpu:  # CPU seconds, as the trainer logs them: here the eval took 6, the iterations 30 and 24
        for row, key in zip(
            rows, ["time/cpu_eval", "time/cpu_iteration", "time/cpu_iteration"], strict=False
        ):
            row[key] = row.get("time/eval", row.get("time/iteration")) / 2
    (cfg.run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_mean_std_ci_by_hand():
    mean, std, ci = mean_std_ci([1.0, 2.0, 3.0])
    assert (mean, std) == (2.0, 1.0)
    assert ci == pytest.approx(4.303 / math.sqrt(3))
    assert mean_std_ci([5.0]) == (5.0, 0.0, 0.0)


def test_runs_are_summarised_and_aggregated_over_seeds(tmp_path):
    fake_run(tmp_path, 0, 0.30)
    fake_run(tmp_path, 1, 0.40)
    fake_run(tmp_path, 2, 0.50)
    fake_run(tmp_path, 3, 0.90, finished=False)  # killed: left out
    fake_run(tmp_path, 0, 0.10, reward="dense")
    runs = load_runs(tmp_path)
    assert len(runs) == 4 and len(load_runs(tmp_path, finished_only=False)) == 5
    rows = summarise(runs)
    first = next(r for r in rows if r["seed"] == 0 and r["reward"] == "outcome")
    assert first["initial"] == pytest.approx(20.0) and first["final"] == pytest.approx(30.0)
    assert first["minutes"] == pytest.approx(1.0) and first["env_steps"] == 200
    agg = {r["reward"]: r for r in aggregate(rows)}
    out = agg["outcome"]
    assert (
        out["seeds"] == 3 and out["final"] == pytest.approx(40.0) and out["final_std"] == pytest.approx(10.0)
    )
    assert out["change"] == pytest.approx(20.0) and out["beats_spread"] is True
    assert agg["dense"]["beats_spread"] is None  # one seed: no spread to beat
    head, lines = results_table(list(agg.values()))
    md = to_markdown(head, lines)
    assert "| shop | grpo | outcome | 3 | 20.0 ± 0.0 | 40.0 ± 10.0 | +20.0 | yes |" in md


def test_cpu_minutes_where_logged_blank_where_not(tmp_path):
    fake_run(tmp_path, 0, 0.3, cpu=True)
    fake_run(tmp_path, 1, 0.4, cpu=True)
    fake_run(tmp_path, 0, 0.3, reward="dense")  # an older kit's run: wall time only
    rows = {(r["reward"], r["seed"]): r for r in summarise(load_runs(tmp_path))}
    assert rows["outcome", 0]["minutes"] == pytest.approx(1.0)
    assert rows["outcome", 0]["cpu_minutes"] == pytest.approx(0.5)
    assert math.isnan(rows["dense", 0]["cpu_minutes"])
    head, lines = results_table(aggregate(list(rows.values())))
    by_reward = {line[2]: dict(zip(head, line, strict=True)) for line in lines}
    assert by_reward["outcome"]["CPU min/run"] == "0.5" and by_reward["dense"]["CPU min/run"] == ""


def test_learning_curves_band_over_seeds(tmp_path):
    from rspo.plots import learning_curves

    for seed, final in enumerate([0.3, 0.5]):
        fake_run(tmp_path, seed, final)
    fig = learning_curves(load_runs(tmp_path), x="env_steps")
    band, line = fig.data
    assert band.fill == "toself" and list(line.x) == [0, 200]
    assert list(line.y) == pytest.approx([20.0, 40.0])


def test_ensure_run_trains_then_reuses_and_refuses_a_different_config(tmp_path, one_thread):
    from test_trainer import small

    from rspo.experiments import ensure_run
    from rspo.policies.tiny import untrained_tiny_policy

    cfg = small(tmp_path, env="shop", iterations=1, max_steps=3, eval_every=1, eval_tasks=2, temperature=1.0)
    run = ensure_run(cfg, policy=untrained_tiny_policy(0))
    assert run.finished and [r["iteration"] for r in run.rows] == [0, 1]
    again = ensure_run(cfg)  # finished: loaded, not retrained (no policy needed)
    assert again.rows == run.rows
    with pytest.raises(ValueError, match="config differs in lr"):
        ensure_run(TrainConfig(**{**cfg.to_dict(), "lr": 0.5}))


def test_finished_run_without_training_none_for_missing_and_partial_runs(tmp_path):
    from tiny_fixtures import file_snapshot

    from rspo.experiments import ensure_run, finished_run, gather_runs

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
    from rspo.experiments import grid_configs

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
    from rspo.analysis import method_name
    from rspo.experiments import ablation_configs

    configs = ablation_configs(
        "smoke", tmp_path, ["shop"], [{"swap_variant": "mixed"}, {"swap_lambda": 0.5}], [0]
    )
    assert [c.name for c in configs] == [
        "shop-grpo-rspo-swap_variant=mixed-s0",
        "shop-grpo-rspo-swap_lambda=0.5-s0",
    ]
    assert [method_name(c) for c in configs] == ["rspo-mixed", "rspo λ=0.5"]
    assert {(c.algo, c.reward) for c in configs} == {("grpo", "rspo")}


def test_finished_run_of_a_trained_smoke_run(tmp_path, one_thread):
    from rspo.experiments import ensure_run, finished_run, run_config

    cfg = run_config("smoke", "shop", "grpo", "outcome", 0, tmp_path)
    assert finished_run(cfg) is None
    run = ensure_run(cfg)
    assert run.finished and finished_run(cfg).rows == run.rows
    assert ensure_run(cfg, train=False).rows == run.rows


@pytest.mark.slow
def test_runs_trained_two_at_a_time_equal_runs_trained_one_by_one(tmp_path, one_thread):
    from rspo.experiments import ensure_run, grid_configs, train_runs

    def grid(where):
        return grid_configs("smoke", where, ["shop"], ["grpo"], ["outcome", "dense"], [0])

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


def test_archived_runs_restore_elsewhere_as_finished_runs(tmp_path):
    from rspo.analysis import archive_runs, restore_runs
    from rspo.experiments import finished_run

    src, archive, dst = tmp_path / "src", tmp_path / "docs" / "runs", tmp_path / "elsewhere"
    fake_run(src, 0, 0.5)
    fake_run(src, 1, 0.5, finished=False)  # cut short: not archived
    (src / fake_name(0) / "checkpoint").mkdir()
    (src / fake_name(0) / "checkpoint" / "state.pt").write_bytes(b"weights")
    (src / "initial-shop.json").write_text("[]\n")
    (archive / "stale").mkdir(parents=True)  # an earlier archive's run: replaced
    assert archive_runs(src, archive) == [fake_name(0)]
    assert sorted(p.name for p in archive.iterdir()) == ["initial-shop.json", fake_name(0)]
    assert sorted(p.name for p in (archive / fake_name(0)).iterdir()) == ["config.json", "metrics.jsonl"]

    fake_run(dst, 2, 0.7)  # a run already there is left alone
    assert restore_runs(archive, dst) == [fake_name(0)]
    cfg = TrainConfig(env="shop", algo="grpo", reward="outcome", seed=0, iterations=2, out_dir=str(dst))
    run = finished_run(cfg)  # out_dir follows the new place: the same run, finished, found there
    assert run is not None and run.rows[-1]["eval/success"] == 0.5
    assert (dst / "initial-shop.json").read_text() == "[]\n"
    assert restore_runs(archive, dst) == []  # again: nothing to do
    with pytest.raises(FileNotFoundError, match="no run archive"):
        restore_runs(tmp_path / "nowhere", dst)


def fake_name(seed):
    return TrainConfig(env="shop", algo="grpo", reward="outcome", seed=seed).name


def test_diagnostics_average_first_and_second_half_of_training_then_seeds(tmp_path):
    from rspo.analysis import diagnostics_table, load_runs

    for seed, successes in ((0, [0.1, 0.2, 0.3, 0.4]), (1, [0.3, 0.4, 0.5, 0.6])):
        cfg = TrainConfig(
            env="shop", algo="grpo", reward="rspo", seed=seed, iterations=4, out_dir=str(tmp_path)
        )
        cfg.run_dir.mkdir(parents=True)
        cfg.save(cfg.run_dir / "config.json")
        rows = [{"iteration": 0, "eval/success": 0.2}]  # the initial evaluation: not a training row
        rows += [
            {"iteration": i + 1, "rollout/success": s, "buffer/age_mean": 1.0}
            for i, s in enumerate(successes)
        ]
        rows[-1]["eval/success"] = 0.5
        (cfg.run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    head, lines = diagnostics_table(load_runs(tmp_path))
    row = dict(zip(head, lines[0], strict=True))
    assert row["seeds"] == "2" and row["reward"] == "rspo"
    # seed 0: 15% -> 35%, seed 1: 35% -> 55%; their means 25% -> 45%
    assert row["rollout success %"] == "25.0 -> 45.0"
    assert row["replay age (iters)"] == "1.00 -> 1.00" and row["explorer success %"] == ""  # not logged


def test_runs_from_different_starting_evaluations_are_pointed_out(tmp_path):
    from rspo.analysis import mixed_starts

    fake_run(tmp_path, 0, 0.3)
    fake_run(tmp_path, 1, 0.4)
    assert mixed_starts(load_runs(tmp_path)) == []
    fake_run(tmp_path, 2, 0.4, initial=0.078125)  # trained on a machine whose warm start differs
    (line,) = mixed_starts(load_runs(tmp_path))
    assert "shop runs started from 2 different initial evaluations (7.8%, 20.0% success)" in line


def test_weights_fingerprint_tells_policies_apart():
    import torch

    from rspo.experiments import weights_fingerprint
    from rspo.policies.tiny import untrained_tiny_policy

    a, b = untrained_tiny_policy(0), untrained_tiny_policy(0)
    assert weights_fingerprint(a) == weights_fingerprint(b)
    assert weights_fingerprint(untrained_tiny_policy(1)) != weights_fingerprint(a)
    with torch.no_grad():
        next(b.model.parameters()).view(-1)[0] += 1e-6  # one float in the last bits
    assert weights_fingerprint(b) != weights_fingerprint(a)


def test_initial_eval_is_cached_per_starting_weights(tmp_path, one_thread):
    """A cached initial evaluation is reused only for the weights it evaluated: one restored from
    another machine's (differently built) warm start is evaluated again, not taken over."""
    from rspo.experiments import initial_eval, run_config

    cfg = run_config("smoke", "shop", "grpo", "outcome", 0, tmp_path)
    first = initial_eval(cfg)
    cache = tmp_path / "initial-shop.json"
    (entry,) = json.loads(cache.read_text())
    assert len(entry["key"]["weights"]) == 12 and entry["eval"] == first
    entry["eval"]["eval/success"] = 0.99  # marks a reuse
    cache.write_text(json.dumps([entry]))
    assert initial_eval(cfg)["eval/success"] == 0.99
    entry["key"]["weights"] = "0" * 12  # the same settings, other weights
    cache.write_text(json.dumps([entry]))
    assert initial_eval(cfg)["eval/success"] == first["eval/success"]
    assert [e["key"]["weights"] for e in json.loads(cache.read_text())][0] == "0" * 12  # kept beside


def test_summarise_one_split_reads_its_keys_and_leaves_out_runs_without_it(tmp_path):
    fake_run(tmp_path, 0, 0.30)
    pooled = TrainConfig(env="shop", algo="grpo", reward="dense", seed=0, iterations=1, out_dir=str(tmp_path))
    pooled.run_dir.mkdir(parents=True)
    pooled.save(pooled.run_dir / "config.json")
    rows = [
        {"iteration": 0, "eval/success": 0.2, "eval/pool/success": 0.25, "eval/pool/score": 30.0},
        {"iteration": 1, "eval/success": 0.2, "eval/pool/success": 0.5, "eval/pool/score": 60.0},
    ]
    (pooled.run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    runs = load_runs(tmp_path)
    assert len(summarise(runs)) == 2
    (row,) = summarise(runs, "pool")
    assert row["reward"] == "dense" and (row["initial"], row["final"]) == (25.0, 50.0)
    assert (row["initial_score"], row["final_score"]) == (30.0, 60.0)


def test_a_run_continued_past_the_asked_length_is_read_cut_there_and_never_rewritten(tmp_path, one_thread):
    """A grid asked at 2 iterations after its run was continued to 4 (the lab's equal-steps baselines):
    the run is read as it was at 2, and config.json and metrics.jsonl are left as they are."""
    from test_trainer import small
    from tiny_fixtures import file_snapshot

    from rspo.experiments import ensure_run, finished_run
    from rspo.policies.tiny import untrained_tiny_policy

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
