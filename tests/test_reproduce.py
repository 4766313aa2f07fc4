"""rspo.study.reproduce: ``rspo reproduce --finished-only`` (notebooks 03-05 over the runs already finished, a
partial report) and ``--publish`` (a report copied for committing under docs/, with its PNG figures, its
run logs under results/, and ``--restore``). The report's own content: tests/test_report.py; a real (smoke) reproduce:
tests/test_notebooks.py."""

from __future__ import annotations

import json

import pytest
from tiny_fixtures import file_snapshot

from rspo.study.reproduce import publish_report


def test_the_flag_reaches_only_the_notebooks_that_declare_train_missing(tmp_path):
    pytest.importorskip("papermill")
    from rspo.cli import build_parser
    from rspo.study.reproduce import notebooks, parameters

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
    from rspo.core.profiles import CPU_ABLATIONS
    from rspo.study.reproduce import NOTEBOOKS_DIR, table_parameters

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
    import rspo.study.reproduce as job
    from rspo.study.experiments import ensure_run, run_config

    runs = tmp_path / "runs"
    three = ["grpo", "ppo", "gigpo"]
    ablations = [{"swap_variant": "mixed"}, {"swap_variant": "schedule"}]
    monkeypatch.setitem(
        job.PROFILES,
        "smoke",
        {"*": {"profile": "smoke", "envs": ["detour"], "algos": three, "seeds": [0], "ablations": ablations}},
    )
    monkeypatch.setitem(job.SHARED_RUNS, "smoke", runs)
    ensure_run(run_config("smoke", "detour", "grpo", "outcome", 0, runs))
    before = file_snapshot(runs)
    out = tmp_path / "out"
    report = job.reproduce("smoke", out, ["03", "04", "05"], write=lambda *_: None, finished_only=True)
    assert file_snapshot(runs) == before  # nothing trained, nothing written
    text = report.read_text()
    assert "partial report: 1 of 11 runs of the profile finished" in text  # 9 in the table, 2 ablations
    assert "- detour-grpo-dense: 0" in text and "- detour-grpo-outcome: 0" not in text
    assert "- detour-grpo-rspo-swap_variant=mixed: 0" in text
    assert "| detour | grpo | outcome | 1 |" in text  # the results table over the finished run

    def printed(name):
        nb = json.loads((out / f"{name}.ipynb").read_text())
        return "".join(
            "".join(o.get("text", "")) for c in nb["cells"] if c["cell_type"] == "code" for o in c["outputs"]
        )

    assert "1 of 6 runs ready" in printed("03_sparse_vs_dense_baselines")
    assert "missing (not finished, not trained): detour-grpo-dense-s0" in printed(
        "03_sparse_vs_dense_baselines"
    )
    assert "no finished RSPO run" in printed("04_rspo") and "all checks passed (1 of 9 runs)" in printed(
        "04_rspo"
    )
    assert "1 of 9 main runs, 0 of 2 ablation runs" in printed("05_analysis")
    assert "all checks passed" in printed("05_analysis")


# --- --publish and --restore ------------------------------------------------------------------------
def _report(tmp_path):
    out = tmp_path / "reproduce-cpu"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / "curves.png").write_bytes(b"\x89PNG fake")
    (out / "figures" / "coverage.html").write_text("<html>big</html>")
    (out / "report.md").write_text(
        "# report\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n![curves](figures/curves.png)\n"
        "- [coverage](figures/coverage.html) (interactive HTML)\n![gone](figures/gone.png)\n\n"
        "| [00_quickstart](00_quickstart.ipynb) | 58 |\nsee [the paper](https://arxiv.org/abs/2607.04713)\n"
    )
    return out / "report.md"


def test_png_figures_travel_and_the_links_follow_them(tmp_path):
    dest = publish_report(_report(tmp_path), tmp_path / "docs" / "results-cpu.md")
    text = dest.read_text()
    assert (tmp_path / "docs" / "results-cpu" / "curves.png").read_bytes() == b"\x89PNG fake"
    assert "![curves](results-cpu/curves.png)" in text
    assert "| 1 | 2 |" in text and "[the paper](https://arxiv.org/abs/2607.04713)" in text
    # HTML figures and executed notebooks stay behind, named without a (broken) link
    assert "coverage.html" not in text and "coverage (an interactive HTML figure" in text
    assert "| 00_quickstart | 58 |" in text and ".ipynb" not in text
    assert not (tmp_path / "docs" / "results-cpu" / "coverage.html").exists()
    # a link to a figure that is not there is left as it was, not dropped silently
    assert "![gone](figures/gone.png)" in text


def test_publishing_again_replaces_the_old_figures(tmp_path):
    report = _report(tmp_path)
    dest = tmp_path / "docs" / "results-cpu.md"
    stale = tmp_path / "docs" / "results-cpu" / "old.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    dest.write_text("![old](results-cpu/old.png)\n")  # the earlier publication, which linked it
    mine = stale.parent / "notes.txt"  # what no publication wrote stays (issue 32)
    mine.write_text("mine")
    publish_report(report, dest)
    assert not stale.exists() and (stale.parent / "curves.png").exists() and mine.read_text() == "mine"


def test_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="rspo reproduce"):
        publish_report(tmp_path / "nope" / "report.md", tmp_path / "docs" / "r.md")
    with pytest.raises(ValueError, match="Markdown"):
        publish_report(_report(tmp_path), tmp_path / "docs" / "results.html")


def test_the_cli_flag():
    from rspo.cli import build_parser

    args = build_parser().parse_args(["reproduce", "--profile", "cpu", "--publish", "docs/results-cpu.md"])
    assert args.publish == "docs/results-cpu.md"
    assert build_parser().parse_args(["reproduce"]).publish is None
    args = build_parser().parse_args(["reproduce", "--restore"])
    assert args.restore == "" and build_parser().parse_args(["reproduce"]).restore is None


def test_published_run_logs_rebuild_the_runs_folder_with_restore(tmp_path, monkeypatch):
    """--publish archives the finished runs' logs beside the report; --restore puts them back first."""
    from test_analysis import fake_name, fake_run

    from rspo.cli import build_parser
    from rspo.study import reproduce as job

    report = _report(tmp_path)
    fake_run(report.parent / "runs", 0, 0.5)  # the quick profile's runs live in <out>/runs
    dest = publish_report(report, tmp_path / "docs" / "results-cpu.md", runs=report.parent / "runs")
    # the figures stay with the report in docs/; the logs go to the results tree beside it
    archive = tmp_path / "results" / "cpu" / "runs"
    assert (archive / fake_name(0) / "metrics.jsonl").is_file() and (
        dest.parent / "results-cpu" / "curves.png"
    ).exists()
    assert not (dest.parent / "results-cpu" / "runs").exists()

    out = tmp_path / "again"
    monkeypatch.setattr(job, "reproduce", lambda *a, **k: _report(tmp_path / "fresh"))  # no notebooks run
    lines = []
    args = build_parser().parse_args(["reproduce", "--out", str(out), "--restore", str(archive)])
    assert job.main(args, write=lines.append) == 0
    assert (out / "runs" / fake_name(0) / "metrics.jsonl").is_file()
    assert lines[0].startswith("restored 1 finished runs")


def test_published_logs_go_where_restore_reads_them_by_default():
    """``--publish docs/results-<profile>.md`` archives into ``results/<profile>/runs/``, the folder a
    bare ``--restore`` reads; the cpu report's logs are committed there."""
    from pathlib import Path

    from rspo.study.reproduce import ROOT, published_runs

    for profile in ("cpu", "quick", "gpu"):
        assert published_runs(ROOT / "docs" / f"results-{profile}.md") == ROOT / "results" / profile / "runs"
    assert published_runs("docs/results-cpu.md") == Path("results/cpu/runs")
    assert published_runs("docs/results-study.md") == Path("results/study/runs")
    if (ROOT / "docs" / "results-cpu.md").is_file():  # a checkout, not an installed package
        assert len(list((ROOT / "results" / "cpu" / "runs").glob("*/metrics.jsonl"))) >= 54


def test_published_run_logs_are_not_ignored_by_git():
    """The archive is only worth something if it is committed: ``runs/`` (training output) is ignored,
    ``results/<profile>/runs/`` must not be (an earlier .gitignore swallowed it silently)."""
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")

    def ignored(path: str) -> bool:
        return subprocess.run(["git", "check-ignore", "-q", path], cwd=root).returncode == 0

    assert ignored("runs/bench-learning/cpu/household-grpo-rspo-s0/metrics.jsonl")
    for profile in ("cpu", "quick", "gpu"):
        assert not ignored(f"results/{profile}/runs/household-grpo-rspo-s0/metrics.jsonl")
        assert not ignored(f"results/{profile}/runs/initial-household.json")
    assert not ignored("results/misalignment-m1/runs/household-grpo-dense-s0/config.json")
    assert not ignored("results/lab/study1/runs/m0/detour-grpo-outcome-s0/metrics.jsonl")


def test_publish_names_a_notebook_page_without_the_figure_note(tmp_path):
    report = tmp_path / "out" / "report.md"
    report.parent.mkdir()
    report.write_text(
        "| [00_quickstart](00_quickstart.html) | [00_quickstart.ipynb](00_quickstart.ipynb) |\n"
    )
    text = publish_report(report, tmp_path / "docs" / "r.md").read_text()
    assert text == "| 00_quickstart | 00_quickstart.ipynb |\n"
