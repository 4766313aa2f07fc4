"""rspo.study.analysis: run loading, per-run summaries, the seed aggregation behind the results table,
diagnostics and the run archive. Making and training the runs (rspo.study.experiments):
tests/test_experiments.py."""

from __future__ import annotations

import json
import math

import pytest

from rspo.core.config import TrainConfig
from rspo.study.analysis import aggregate, load_runs, mean_std_ci, results_table, summarise, to_markdown


def fake_run(
    root, seed, final, reward="outcome", iterations=2, finished=True, cpu=False, initial=0.2, **config
):
    cfg = TrainConfig(
        env="shop", algo="grpo", reward=reward, seed=seed, iterations=iterations, out_dir=str(root), **config
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
    from rspo.notebook.plots import learning_curves

    for seed, final in enumerate([0.3, 0.5]):
        fake_run(tmp_path, seed, final)
    fig = learning_curves(load_runs(tmp_path), x="env_steps")
    band, line = fig.data
    assert band.fill == "toself" and list(line.x) == [0, 200]
    assert list(line.y) == pytest.approx([20.0, 40.0])


def test_archived_runs_restore_elsewhere_as_finished_runs(tmp_path):
    from rspo.study.analysis import archive_runs, restore_runs
    from rspo.study.experiments import finished_run

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
    from rspo.study.analysis import diagnostics_table, load_runs

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
    from rspo.study.analysis import mixed_starts

    fake_run(tmp_path, 0, 0.3)
    fake_run(tmp_path, 1, 0.4)
    assert mixed_starts(load_runs(tmp_path)) == []
    fake_run(tmp_path, 2, 0.4, initial=0.078125)  # trained on a machine whose warm start differs
    (line,) = mixed_starts(load_runs(tmp_path))
    assert "shop runs started from 2 different initial evaluations (7.8%, 20.0% success)" in line


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
