"""benchmarks/bench_learning.py end to end at the smoke profile: runs, resumes nothing twice, prints the table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_bench_learning_smoke_runs_once_and_prints_the_table(tmp_path):
    import rspo.core.sft as sft

    # detour: the environment whose warm start the reproduce test builds too (the smallest: about 2 min on
    # a fresh machine, where shop's took 4-25), built here, announced (conftest), and not inside the
    # subprocess below, whose timeout is for training
    if not sft.default_policy_path("detour").is_dir():
        sft.build_default("detour")
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_learning.py"), "--profile", "smoke"]
    cmd += ["--envs", "detour", "--algos", "grpo", "--rewards", "outcome", "rspo", "--seeds", "0"]
    cmd += ["--out", str(tmp_path), "--markdown"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "0 of 2 runs finished; running 2" in first.stdout
    assert (
        "| detour | grpo | outcome | 1 |" in first.stdout and "| detour | grpo | rspo | 1 |" in first.stdout
    )
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert "2 of 2 runs finished; running 0" in again.stdout  # finished runs are not repeated
    assert (tmp_path / "smoke" / "initial-detour.json").exists()  # one shared initial evaluation
    assert "2 of 2 runs finished; 0 of 2 combinations over 15 min per run" in again.stdout
    header = next(line for line in again.stdout.splitlines() if line.startswith("| env |"))
    row = next(line for line in again.stdout.splitlines() if line.startswith("| detour | grpo | rspo |"))
    assert header.split("|")[-2].strip() == "CPU min/run" and float(row.split("|")[-2]) >= 0.0  # logged
    assert "projected run time of all 2 runs at the medians: 0.0 h" in again.stdout
    # --split: one evaluation split's success; runs that never evaluated on it are left out
    split = subprocess.run(
        cmd + ["--table-only", "--split", "pool"], capture_output=True, text=True, cwd=ROOT
    )
    assert split.returncode == 0 and "(no finished run evaluated on split 'pool')" in split.stdout
    # the time figures over a larger set: unfinished combinations are named, not guessed
    more = cmd[:-1] + ["--table-only", "--seeds", "0", "1", "--rewards", "outcome", "dense", "rspo"]
    shown = subprocess.run(more, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "2 of 6 runs finished" in shown.stdout and "projected run time of all 6 runs" in shown.stdout
    assert "no finished run yet for detour-grpo-dense" in shown.stdout
    # --ablations: notebook 05's ablation runs join the set (named by their change, apart in the figures)
    ablations = subprocess.run(more + ["--ablations"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert ablations.returncode == 0, ablations.stderr[-2000:]
    assert "2 of 8 runs finished" in ablations.stdout  # 6 + notebook 05's default 2 ablations (seed 0)
    assert "detour-grpo-rspo-mixed" in ablations.stdout and "detour-grpo-rspo-schedule" in ablations.stdout
    # --restore: the published logs of these runs fill another runs folder; nothing is trained again
    from rspo.study.analysis import archive_runs

    archive_runs(tmp_path / "smoke", tmp_path / "published")
    elsewhere = [c if c != str(tmp_path) else str(tmp_path / "elsewhere") for c in cmd]
    restored = subprocess.run(
        elsewhere + ["--restore", str(tmp_path / "published")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert restored.returncode == 0, restored.stderr[-2000:]
    assert (
        "restored 2 finished runs" in restored.stdout and "2 of 2 runs finished; running 0" in restored.stdout
    )
    assert "| detour | grpo | rspo | 1 |" in restored.stdout
