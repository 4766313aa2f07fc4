"""``rspo reproduce --publish``: a report copied for committing under docs/, with its PNG figures."""

from __future__ import annotations

import pytest

from rspo.reproduce import publish_report


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
    publish_report(report, dest)
    assert not stale.exists() and (stale.parent / "curves.png").exists()


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

    from rspo import reproduce as job
    from rspo.cli import build_parser

    report = _report(tmp_path)
    fake_run(report.parent / "runs", 0, 0.5)  # the quick profile's runs live in <out>/runs
    dest = publish_report(report, tmp_path / "docs" / "results-cpu.md", runs=report.parent / "runs")
    archive = dest.with_suffix("") / "runs"
    assert (archive / fake_name(0) / "metrics.jsonl").is_file() and (
        dest.parent / "results-cpu" / "curves.png"
    ).exists()

    out = tmp_path / "again"
    monkeypatch.setattr(job, "reproduce", lambda *a, **k: _report(tmp_path / "fresh"))  # no notebooks run
    lines = []
    args = build_parser().parse_args(["reproduce", "--out", str(out), "--restore", str(archive)])
    assert job.main(args, write=lines.append) == 0
    assert (out / "runs" / fake_name(0) / "metrics.jsonl").is_file()
    assert lines[0].startswith("restored 1 finished runs")


def test_published_run_logs_are_not_ignored_by_git():
    """The archive is only worth something if it is committed: ``runs/`` (training output) is ignored,
    ``docs/results-<profile>/runs/`` must not be (an earlier .gitignore swallowed it silently)."""
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
        assert not ignored(f"docs/results-{profile}/runs/household-grpo-rspo-s0/metrics.jsonl")
        assert not ignored(f"docs/results-{profile}/runs/initial-household.json")
    assert not ignored("docs/misalignment-m1/runs/household-grpo-dense-s0/config.json")
