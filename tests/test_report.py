"""rspo.study.report: the report of ``rspo reproduce`` (Markdown and, through rspo.study.report_html, HTML).

A report is written here over a made-up output folder - committed lab runs copied in, a PNG and a
plotly figure, one executed notebook with a plotly output, a results.json - without running a
notebook; ``tests/test_notebooks.py`` writes one from a real (smoke) run. The results.json it reads:
tests/test_results.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rspo.study.results import save_results

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "results" / "lab" / "study1" / "runs"
CLAIMS_HEAD = ["env", "m", "algo", "seeds o/d/r", "(a) outcome slow", "(b) dense biased", "(c) RSPO >= both"]
MARK = "CLAIMS-ROW-FROM-RESULTS-JSON"


def _notebook(path: Path) -> None:
    """A small executed notebook: a markdown cell and a code cell with a plotly figure output."""
    import nbformat
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=[0, 1, 2], y=[0, 40, 90], name="outcome"))
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# 00 · Quickstart\n\nSome prose."),
        nbformat.v4.new_code_cell(
            "fig",
            outputs=[
                nbformat.v4.new_output(
                    "display_data", data={"application/vnd.plotly.v1+json": json.loads(fig.to_json())}
                )
            ],
        ),
    ]
    nbformat.write(nb, path)


@pytest.fixture
def out(tmp_path):
    """An output folder as `rspo reproduce --profile quick` leaves it before the report is written."""
    if not LAB.is_dir():
        pytest.skip("needs the committed lab runs (results/lab/study1/runs)")
    import plotly.graph_objects as go

    out = tmp_path / "reproduce-quick"
    runs = out / "runs"
    runs.mkdir(parents=True)
    for folder, name in [("m0", "detour-grpo-outcome-s0"), ("m0", "detour-grpo-outcome-s1")] + [
        ("m0.1", f"detour-grpo-{reward}-s{seed}") for reward in ("dense", "rspo") for seed in (0, 1)
    ]:
        shutil.copytree(LAB / folder / name, runs / name)
    figures = out / "figures"
    figures.mkdir()
    (figures / "01_curves.png").write_bytes(b"\x89PNG fake")
    go.Figure(go.Bar(x=["a", "b"], y=[3, 5]), layout_title_text="bars of 04").write_html(
        figures / "04_bars.html", include_plotlyjs=True
    )
    _notebook(out / "00_quickstart.ipynb")
    _notebook(out / "05_analysis.ipynb")
    save_results(figures, "00_quickstart", env="detour", rspo_steps_ratio=1.97)
    save_results(
        figures, "05_analysis", claims={"head": CLAIMS_HEAD, "rows": [["detour", "0.1", "grpo", MARK]]}
    )
    return out


def _write(out, **kw):
    from rspo.study.reproduce import NotebookRun, write_report

    runs = [NotebookRun(p.stem, 6.0 * len(p.stem), p) for p in sorted(out.glob("[0-9][0-9]_*.ipynb"))]
    write_report("quick", out, runs, total_seconds=754, **kw)
    return (out / "report.md").read_text(), (out / "report.html").read_text()


def test_the_report_opens_with_a_header_the_story_and_the_claims(out):
    md, html = _write(out)
    # the header: profile, date, machine, total time
    header = html[html.index('<header class="report-header">') : html.index("</header>")]
    for fact in ("profile", "date", "machine", "total time", "quick", "UTC", "12 min 34 s"):
        assert fact in header
    assert "- **total time:** 12 min 34 s (2 notebooks)" in md
    # styled: a readable font, tables with borders
    assert "font-family: system-ui" in html and "border: 1px solid" in html and "border-collapse" in html
    # the story in words: what the quick profile is, the runs as their configs say, what is noise
    assert "credit-assignment lab" in md and "m = 0.1" in md and "seeds 0 and 1" in md
    assert (
        "**The runs** (6): detour at m = 0, 0.1; grpo with the dense, outcome, rspo rewards; seeds 0, 1" in md
    )
    assert "**What is noise here.** 2 seeds per method" in md
    # the claims table first: before the results table and the figures, in both files
    for text, h in ((md, "## {}"), (html, "<h2>{}</h2>")):
        assert text.index(MARK) < text.index(h.format("Results")) < text.index(h.format("Figures"))
    assert html.index(MARK) < html.index('class="plot"')
    assert "notebook 05, from `results.json`" in md
    # the committed runs' claims (results/lab/study1/claims.json) beside it, this profile's environment only
    assert "| detour | 0.1 | grpo | 10/10/10 |" in md and "| household |" not in md


def test_figures_inline_with_plotly_js_once_and_notebooks_linked_as_html(out):
    md, html = _write(out)
    # plotly.js once, in the head; each plotly figure redrawn inline from its data; PNGs as images
    assert html.count('<script id="plotlyjs">') == 1 and html.count("* plotly.js v") == 1
    assert html.index('<script id="plotlyjs">') < html.index("<body>")
    assert html.count('class="plot"') == 1 and '"bars of 04"' in html
    assert '<img src="figures/01_curves.png"' in html
    assert "![01_curves](figures/01_curves.png)" in md and "[04_bars](figures/04_bars.html)" in md
    # the executed notebook rendered by nbconvert and linked as HTML; its figure drawn from plotly.min.js
    assert "| [00_quickstart](00_quickstart.html) | [00_quickstart.ipynb](00_quickstart.ipynb) | 78 |" in md
    page = (out / "00_quickstart.html").read_text()
    assert (
        '<script src="plotly.min.js"></script>' in page and "Plotly.newPlot" in page and "Some prose." in page
    )
    assert "require.min.js" not in page  # with require.js, plotly.js would not define window.Plotly
    assert (out / "plotly.min.js").stat().st_size > 1_000_000
    assert '<td><a href="00_quickstart.html">00_quickstart</a></td>' in html  # one table, not pipes
    assert "<td>78</td>" in html and "| 78 |" not in html
    # the notebook's key numbers from results.json
    assert "env detour; rspo_steps_ratio 1.97" in md


def test_the_report_decides_the_claims_itself_without_notebook_05(out):
    (out / "05_analysis.ipynb").unlink()  # notebook 05 did not run in this job: its results.json entry is old
    md, _ = _write(out, render=False)
    assert MARK not in md and "decided here from the runs folder" in md
    assert "| detour | 0.1 | grpo | 2/2/2 |" in md  # outcome at m = 0 serves m = 0.1
    assert "[00_quickstart](00_quickstart.html)" not in md and "| 00_quickstart |" in md  # not rendered


def test_the_results_caption_says_one_seed_when_there_is_one():
    from rspo.study.report import seed_caption

    one = seed_caption([{"seeds": 1}, {"seeds": 1}])
    assert "One seed per row" in one and "mean ± std" not in one.lower()
    assert "Mean ± std over 3 seeds" in seed_caption([{"seeds": 3}])
    assert "a row with one seed" in seed_caption([{"seeds": 1}, {"seeds": 2}])


# --- the committed claims table: a data file, rebuilt from the committed logs --------------------------
CLAIMS_JSON = ROOT / "results" / "lab" / "study1" / "claims.json"


def test_the_committed_claims_come_from_the_data_file_not_the_prose(tmp_path):
    from rspo.study.report import COMMITTED_CLAIMS, committed_claims

    assert COMMITTED_CLAIMS == CLAIMS_JSON
    path = tmp_path / "claims.json"
    path.write_text(json.dumps({"head": ["env", "m"], "rows": [["detour", "0"], ["shop", "0"]]}))
    assert committed_claims(path=path) == "| env | m |\n|---|---|\n| detour | 0 |\n| shop | 0 |"
    assert committed_claims({"shop"}, path=path) == "| env | m |\n|---|---|\n| shop | 0 |"
    assert committed_claims({"household"}, path=path) == ""
    assert committed_claims(path=tmp_path / "none.json") == ""  # outside a checkout


def test_the_lab_readme_shows_the_committed_claims_table():
    """docs/lab/README.md's table between ``<!-- claims -->`` markers is a copy of the data file (the
    report reads the file); the two must not drift apart."""
    import re

    from rspo.study.report import committed_claims

    readme = ROOT / "docs" / "lab" / "README.md"
    if not CLAIMS_JSON.is_file() or not readme.is_file():
        pytest.skip("needs a checkout (results/lab/study1/claims.json, docs/lab/README.md)")
    m = re.search(r"<!-- claims -->\n(.*?)<!-- /claims -->", readme.read_text(), re.S)
    assert m and m.group(1).strip() == committed_claims()


@pytest.mark.slow
def test_the_committed_claims_file_is_what_lab_premises_writes_from_the_committed_logs(tmp_path):
    """``benchmarks/lab_premises.py --claims`` (its documented command) rebuilds the committed file
    exactly from the committed logs (about 10 s: it reads every lab run)."""
    import subprocess
    import sys

    if not (LAB.is_dir() and CLAIMS_JSON.is_file()):
        pytest.skip("needs the committed lab runs (results/lab/study1/runs)")
    out = tmp_path / "claims.json"
    cmd = [sys.executable, "benchmarks/lab_premises.py", "--runs", "results/lab/study1/runs"]
    cmd += ["--claims", "results/cpu/runs", "--claims-out", str(out)]
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    committed, again = json.loads(CLAIMS_JSON.read_text()), json.loads(out.read_text())
    assert again["runs"] == committed["runs"] and again["boot"] == committed["boot"]
    assert (again["head"], again["rows"]) == (committed["head"], committed["rows"])
