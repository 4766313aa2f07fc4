"""The premise checks' arithmetic (benchmarks/lab_premises.py): interpolation, first reach, bootstrap."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location(
    "lab_premises", Path(__file__).resolve().parents[1] / "benchmarks" / "lab_premises.py"
)
lp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lp)


class FakeRun:
    def __init__(self, steps, success):
        self.rows = [
            {"rollout/env_steps": s, "rollout/success": v} for s, v in zip(steps, success, strict=True)
        ]


def test_interp_is_linear_between_points_and_flat_beyond():
    xs, ys = [0.0, 10.0, 20.0], [0.0, 1.0, 1.0]
    assert lp.interp(xs, ys, 5.0) == pytest.approx(0.5)
    assert lp.interp(xs, ys, -1.0) == 0.0 and lp.interp(xs, ys, 99.0) == 1.0


def test_first_reach_uses_the_mean_curve_against_steps():
    fast = FakeRun([10, 20, 30], [0.0, 1.0, 1.0])
    slow = FakeRun([10, 20, 30], [0.0, 0.0, 1.0])
    grid = [float(x) for x in range(1, 31)]
    assert lp.first_reach([fast], "rollout/success", 1.0, grid) == 20.0
    assert lp.first_reach([fast, slow], "rollout/success", 1.0, grid) == 30.0
    assert lp.first_reach([slow], "rollout/success", 2.0, grid) == float("inf")


def test_bootstrap_interval_contains_the_estimate_and_is_zero_width_without_spread():
    est, low, high = lp.bootstrap(lambda g: sum(g) / len(g), [[1.0, 2.0, 3.0, 4.0]], 500)
    assert low <= est <= high and low < high
    assert lp.bootstrap(lambda g: sum(g) / len(g), [[2.0, 2.0]], 100) == (2.0, 2.0, 2.0)


def test_verdicts():
    assert lp.verdict(0.1, 0.4, 0.3, below=0.5) == "holds"
    assert lp.verdict(0.1, 0.7, 0.3, below=0.5) == "within noise"
    assert lp.verdict(0.6, 0.9, 0.7, below=0.5) == "no"
    assert lp.verdict(1.0, 5.0, 3.0, above=0.0) == "holds"
    assert lp.verdict(-1.0, 5.0, 3.0, above=0.0) == "within noise"
