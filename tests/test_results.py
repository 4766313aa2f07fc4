"""rspo.study.results: the notebooks' results.json - merged per notebook, plain JSON, one entry per notebook."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rspo.study.results import jsonable, load_results, run_numbers, save_results

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "results" / "lab" / "study1" / "runs"


def test_save_results_merges_per_notebook_and_needs_a_folder(tmp_path):
    figures = tmp_path / "figures"
    assert save_results("", "00_quickstart", x=1) is None and not list(tmp_path.iterdir())
    save_results(figures, "00_quickstart", ratio=1.5, steps=(1, 2))
    save_results(figures, "01_environments_and_rewards", won={"household": 3})
    save_results(figures, "00_quickstart", ratio=2.0, nan=math.nan)  # replaces 00's entry only
    assert load_results(tmp_path) == {
        "00_quickstart": {"ratio": 2.0, "nan": None},
        "01_environments_and_rewards": {"won": {"household": 3}},
    }
    assert load_results(tmp_path / "nowhere") == {}


def test_jsonable_and_run_numbers():
    import numpy as np
    import torch

    from rspo.study.analysis import load_runs

    value = {1: (np.float32(0.5), torch.tensor(2.0), float("inf")), "p": Path("/x"), "a": np.arange(2)}
    assert jsonable(value) == {"1": [0.5, 2.0, None], "p": "/x", "a": [0, 1]}
    runs = [r for r in load_runs(LAB / "m0.1") if r.config.name == "detour-grpo-rspo-s0"]
    if not runs:
        pytest.skip("needs the committed lab runs (results/lab/study1/runs)")
    (n,) = run_numbers(runs)
    assert n["name"] == "detour-grpo-rspo-s0" and n["reward"] == "rspo" and n["misalignment"] == 0.1
    assert n["finished"] and n["iterations"] == runs[0].config.iterations
    assert n["eval_success_final"] == 100 * runs[0].rows[-1]["eval/success"]
    json.dumps(n)  # machine-readable as it is


@pytest.mark.parametrize(
    "stem",
    [
        "00_quickstart",
        "01_environments_and_rewards",
        "02_credit_assignment",
        "03_sparse_vs_dense_baselines",
        "04_rspo",
        "05_analysis",
    ],
)
def test_each_notebook_ends_by_saving_its_key_numbers_under_its_own_name(stem):
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
    last = "".join(nb["cells"][-1]["source"])
    assert f'save_results(figures_dir, "{stem}",' in last
    if stem == "05_analysis":  # the claims the report shows first
        assert "claims=" in last
