"""The browser check (benchmarks/browser_check.py) as a test: a smoke reproduce opened in JupyterLab
and Chromium headless. Slow (minutes); skipped without Playwright (``pip install -e ".[browser]"``)
or a Chromium (``apt-get install chromium``; ``RSPO_CHROMIUM`` names another executable).

``RSPO_BROWSER_OUT`` names a finished ``rspo reproduce`` folder to check instead of running the smoke
profile here. Screenshots go to ``runs/browser-check-test/``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("RSPO_CHROMIUM", "/usr/bin/chromium")


def _browser_check():
    spec = importlib.util.spec_from_file_location("browser_check", ROOT / "benchmarks" / "browser_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_notebooks_widgets_and_report_draw_in_a_real_browser(tmp_path):
    pytest.importorskip("playwright", reason='the browser extra: pip install -e ".[browser]"')
    pytest.importorskip("papermill")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set RSPO_CHROMIUM)")
    out = Path(os.environ.get("RSPO_BROWSER_OUT") or tmp_path / "reproduce-smoke")
    if not (out / "report.html").is_file():
        subprocess.run(
            [sys.executable, "-m", "rspo.cli", "reproduce", "--profile", "smoke", "--out", str(out)],
            check=True,
            cwd=ROOT,
        )
    result = _browser_check().check(out, ROOT / "runs" / "browser-check-test", CHROMIUM)
    assert not result.failures, "\n".join(result.failures)
    # every executed notebook was opened in JupyterLab, the widget was moved, every page was opened
    stems = {p.stem for p in out.glob("[0-9][0-9]_*.ipynb")}
    assert {f"lab-{s}" for s in stems} | {f"html-{s}" for s in stems} <= set(result.checked)
    assert "lab-02-widgets" in result.checked and "html-report" in result.checked


def test_the_check_says_what_it_lacks_without_a_browser(tmp_path, capsys):
    """No report to open, no Chromium: exit status 2 and a line saying what to do (no browser needed)."""
    check = _browser_check()
    assert check.main([str(tmp_path)]) == 2 and "rspo reproduce" in capsys.readouterr().err
    (tmp_path / "report.html").write_text("<html></html>")
    assert check.main([str(tmp_path), "--chromium", str(tmp_path / "none")]) == 2
    assert "apt-get install chromium" in capsys.readouterr().err


def test_plotly_outputs_are_counted_from_the_executed_notebook(tmp_path):
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "outputs": [{"output_type": "display_data", "data": {"application/vnd.plotly.v1+json": {}}}],
            },
            {"cell_type": "code", "outputs": [{"output_type": "stream", "text": "x"}]},
            {"cell_type": "markdown", "source": "# t"},
        ]
    }
    (tmp_path / "n.ipynb").write_text(json.dumps(nb))
    assert _browser_check().plotly_outputs(tmp_path / "n.ipynb") == 1


def test_a_flat_line_counts_as_explained_only_by_a_sentence_that_names_it_and_says_zero():
    """The check passes a line at 0 throughout only where a sentence beside it names the line (its first
    word: a setting or a method) and says 0 / never / nothing; any "0%" elsewhere on the page used to do."""
    says_why = _browser_check().says_why
    assert says_why(
        "dense (10 seeds): seed 40", "Above. dense: seed 40 at 0% greedy test success at every evaluation"
    )
    assert says_why(
        "L7-m0.15 dense (3 seeds)", "At L7-m0.15, L7-m0.2 no seed reaches 25%: nothing to hand over."
    )
    assert says_why(
        "x", "05 · by steps — 'x': 0 at every point (its line lies on the axis)"
    )  # a report caption
    assert not says_why(
        "dense (3 seeds)", "The outcome learner won 0% at first. The dense learner rose to 40%."
    )
    assert not says_why("dense (3 seeds)", "The dense learner rose to 40% at T/4.")
    assert not says_why("rspo", "")
