"""The numbered notebooks: a parameters cell, no committed outputs, and a clean headless run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_there_are_notebooks_and_a_readme_row_for_each():
    assert NOTEBOOKS
    readme = (ROOT / "notebooks" / "README.md").read_text()
    for nb in NOTEBOOKS:
        assert nb.name in readme, f"notebooks/README.md has no row for {nb.name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_has_a_parameters_cell_and_no_outputs(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    assert nb["cells"][0]["cell_type"] == "markdown" and nb["cells"][0]["source"][0].startswith("# ")
    for c in code:
        assert not c.get("outputs") and c.get("execution_count") is None, "outputs must be stripped in git"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_headless_with_papermill(path, tmp_path):
    papermill = pytest.importorskip("papermill")
    papermill.execute_notebook(
        str(path), str(tmp_path / path.name), cwd=str(ROOT), kernel_name="python3", progress_bar=False
    )
