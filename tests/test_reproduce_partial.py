"""``rspo reproduce --finished-only``: notebooks 03-05 over the runs already finished, a partial report."""

from __future__ import annotations

import json

import pytest
from tiny_fixtures import file_snapshot


def test_the_flag_reaches_only_the_notebooks_that_declare_train_missing(tmp_path):
    pytest.importorskip("papermill")
    from rspo.cli import build_parser
    from rspo.reproduce import notebooks, parameters

    assert build_parser().parse_args(["reproduce", "--profile", "cpu", "--finished-only"]).finished_only
    assert not build_parser().parse_args(["reproduce"]).finished_only
    declaring = set()
    for path in notebooks():
        p = parameters("quick", path, tmp_path, finished_only=True)
        if "train_missing" in p:
            assert p["train_missing"] is False and "train_missing" not in parameters("quick", path, tmp_path)
            declaring.add(path.stem[:2])
    assert declaring == {"03", "04", "05"}


def test_the_table_is_what_notebook_05_reads():
    """The report counts envs x algos x rewards x seeds; algos are notebook 05's (and 03's, 04's) default."""
    pytest.importorskip("papermill")
    from rspo.experiments import CPU_ABLATIONS
    from rspo.reproduce import NOTEBOOKS_DIR, table_parameters

    t = table_parameters("cpu")
    assert t == {
        "profile": "cpu",
        "envs": ["household", "shop"],
        "algos": ["grpo", "ppo", "gigpo"],
        "seeds": [0, 1, 2],
        "ablations": CPU_ABLATIONS,
        "ablation_seeds": [0],
    }
    # a student who opens notebooks 03-05 gets the quick profile's table: the same defaults in each
    quick = {k: v for k, v in table_parameters("quick").items() if k in ("envs", "algos", "seeds")}
    assert quick == {"envs": ["detour"], "algos": ["grpo"], "seeds": [0, 1]}
    for name in ("03_sparse_vs_dense_baselines", "04_rspo", "05_analysis"):
        nb = json.loads((NOTEBOOKS_DIR / f"{name}.ipynb").read_text())
        cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
        for key, value in quick.items():
            assert f"{key} = {json.dumps(value)}" in "".join(cell["source"]), (name, key)


@pytest.mark.slow
def test_finished_only_reports_the_finished_runs_and_trains_nothing(tmp_path, monkeypatch, one_thread):
    """One finished run of the 9 of a one-env, one-seed smoke table: notebooks 03-05 run over it."""
    pytest.importorskip("papermill")
    import rspo.reproduce as job
    from rspo.experiments import ensure_run, run_config

    runs = tmp_path / "runs"
    three = ["grpo", "ppo", "gigpo"]
    ablations = [{"swap_variant": "mixed"}, {"swap_variant": "schedule"}]
    monkeypatch.setitem(
        job.PROFILES,
        "smoke",
        {"*": {"profile": "smoke", "envs": ["shop"], "algos": three, "seeds": [0], "ablations": ablations}},
    )
    monkeypatch.setitem(job.SHARED_RUNS, "smoke", runs)
    ensure_run(run_config("smoke", "shop", "grpo", "outcome", 0, runs))
    before = file_snapshot(runs)
    out = tmp_path / "out"
    report = job.reproduce("smoke", out, ["03", "04", "05"], write=lambda *_: None, finished_only=True)
    assert file_snapshot(runs) == before  # nothing trained, nothing written
    text = report.read_text()
    assert "partial report: 1 of 11 runs of the profile finished" in text  # 9 in the table, 2 ablations
    assert "- shop-grpo-dense: 0" in text and "- shop-grpo-outcome: 0" not in text
    assert "- shop-grpo-rspo-swap_variant=mixed: 0" in text
    assert "| shop | grpo | outcome | 1 |" in text  # the results table over the finished run

    def printed(name):
        nb = json.loads((out / f"{name}.ipynb").read_text())
        return "".join(
            "".join(o.get("text", "")) for c in nb["cells"] if c["cell_type"] == "code" for o in c["outputs"]
        )

    assert "1 of 6 runs ready" in printed("03_sparse_vs_dense_baselines")
    assert "missing (not finished, not trained): shop-grpo-dense-s0" in printed(
        "03_sparse_vs_dense_baselines"
    )
    assert "no finished RSPO run" in printed("04_rspo") and "all checks passed (1 of 9 runs)" in printed(
        "04_rspo"
    )
    assert "1 of 9 main runs, 0 of 2 ablation runs" in printed("05_analysis")
    assert "all checks passed" in printed("05_analysis")
