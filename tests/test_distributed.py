"""Data parallelism on a CPU: two processes under torchrun (gloo) train one policy, weights equal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.parametrize("reward", ["outcome", "rspo"])
def test_two_processes_split_the_tasks_and_keep_the_weights_equal(tmp_path, reward):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    cmd += [str(ROOT / "tests" / "dist_worker.py"), str(tmp_path), reward]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["world"] == 2
    (sum0, moved0), (sum1, moved1) = result["param_sums"]
    assert sum0 == sum1 and moved0 == moved1 > 0  # both processes took the same averaged steps
    rows = result["rows"]
    assert [r["iteration"] for r in rows] == [0, 1, 2]
    # the metrics row counts both processes' episodes: 4 tasks x 2 copies
    assert all(r["rollout/episodes"] == 8 for r in rows[1:])
    assert rows[-1]["rollout/env_steps"] == (2 if reward == "rspo" else 1) * sum(
        r["rollout/turns"] for r in rows[1:]
    )
    assert "eval/valid_seen/success" in rows[-1] and (tmp_path / "ddp" / "checkpoint" / "state.pt").exists()


def test_merge_metrics_sums_counts_and_weighs_swap_ratios_by_trained_turns():
    from rspo.core.distributed import merge_metrics

    rows = [
        {
            "rollout/episodes": 4,
            "loss/kl": 0.1,
            "loss/ratio_max": 1.1,
            "swap/turns": 0,
            "swap/is_ratio_mean": 0.0,
        },
        {
            "rollout/episodes": 4,
            "loss/kl": 0.3,
            "loss/ratio_max": 1.3,
            "swap/turns": 6,
            "swap/is_ratio_mean": 0.9,
        },
    ]
    out = merge_metrics(rows)
    assert out["rollout/episodes"] == 8 and out["swap/turns"] == 6 and out["loss/ratio_max"] == 1.3
    assert out["loss/kl"] == pytest.approx(0.2)
    assert out["swap/is_ratio_mean"] == pytest.approx(0.9)  # the process without trained turns has no ratio
