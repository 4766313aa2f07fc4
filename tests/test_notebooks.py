"""The numbered notebooks: a parameters cell, no committed outputs, and a clean headless run."""

from __future__ import annotations

import json
import re
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
def test_papermill_reads_every_parameter_and_reproduce_sets_the_output_folders(path):
    """papermill silently skips a parameter line it cannot parse (e.g. '=' or a quote in its comment)."""
    papermill = pytest.importorskip("papermill")
    nb = json.loads(path.read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    assigned = [line.split("=")[0].strip() for line in "".join(cell["source"]).splitlines() if "=" in line]
    assert list(papermill.inspect_notebook(str(path))) == assigned
    assert {"figures_dir", "runs_dir"} <= set(assigned)


@pytest.mark.slow
def test_reproduce_runs_the_notebooks_and_writes_the_report(tmp_path):
    """The quick profile's notebooks and parameters at the smoke training scale (the ``smoke`` profile:
    2 iterations; ``make reproduce`` runs the quick profile itself), each run headless with papermill,
    the table's runs trained first in the terminal, two at a time."""
    pytest.importorskip("papermill")
    from rspo.study.reproduce import PROFILES, reproduce

    def same(p):  # the smoke profile is the quick one at 2 iterations, with the exercises solved
        return {k: v for k, v in PROFILES[p]["*"].items() if k not in ("profile", "exercises")}

    assert same("smoke") == same("quick") and PROFILES["smoke"]["*"]["exercises"] == "solutions"
    said = []
    report = reproduce("smoke", tmp_path, write=said.append)
    assert any(line.startswith("training 8 runs, 2 at a time") for line in said)  # 6 + 2 ablations
    assert sum(line.startswith("[") and "eval success" in line for line in said) == 8
    # the smoke profile fills in the exercises' solutions: every check of notebooks 01-05 passed
    # (tests/test_exercises.py runs them unsolved); this replaces a separate run of 03-05 there
    from test_exercises import _check_outputs, _outputs

    for stem in (
        "01_environments_and_rewards",
        "02_credit_assignment",
        "03_sparse_vs_dense_baselines",
        "04_rspo",
        "05_analysis",
    ):
        _check_outputs(stem, "solutions", _outputs(json.loads((tmp_path / f"{stem}.ipynb").read_text())))
    text = report.read_text()
    assert "## Results" in text and "## What is reconstructed" in text and (tmp_path / "report.html").exists()
    figures = sorted(p.name for p in (tmp_path / "figures").iterdir())
    assert figures and all(f.split(".")[0] in text for f in figures)  # the report names every figure
    for nb in NOTEBOOKS:
        assert (tmp_path / nb.name).exists() and nb.stem in text


def test_a_failing_notebook_names_itself_and_its_cell(tmp_path, monkeypatch):
    pytest.importorskip("papermill")
    import rspo.study.reproduce as job

    # an environment that does not exist: the first cell that makes one fails
    monkeypatch.setitem(job.PROFILES, "quick", {"*": {}, "02_credit_assignment": {"env_name": "nowhere"}})
    with pytest.raises(
        job.NotebookFailed, match=r"02_credit_assignment.ipynb failed in code cell \d+ of \d+"
    ):
        job.reproduce("quick", tmp_path, ["02"], write=lambda *_: None)


def test_warm_starts_are_built_in_the_terminal_before_the_notebooks(tmp_path, monkeypatch):
    """A fresh cache: the profile's warm start is built by `rspo reproduce` itself, announced, before
    notebook 00 (which would otherwise build it silently for minutes); a cached one is not rebuilt."""
    import rspo.core.sft as sft
    import rspo.study.reproduce as job

    monkeypatch.setenv("RSPO_CACHE", str(tmp_path))
    built, said = [], []
    monkeypatch.setattr(
        sft, "build_default", lambda env, cfg: built.append((env, cfg)) or (tmp_path / env).mkdir()
    )
    monkeypatch.setattr(sft, "default_policy_path", lambda env, cfg: tmp_path / env)
    job.ensure_warm_starts("quick", said.append)
    assert [env for env, _ in built] == job.PROFILES["quick"]["*"]["envs"]
    assert "once" in said[0] and "built in" in said[1]
    # the warm start the quick lab's runs load: its 7 rooms, not the default passage's
    assert built[0][1] == sft.default_config("detour", {"length": 7})
    job.ensure_warm_starts("quick", said.append)
    assert len(built) == 1  # cached
    job.ensure_warm_starts("gpu", said.append)  # a named model: nothing to build
    assert len(built) == 1


def _quick_random_success() -> bool:
    from rspo.core.envs.detour import random_success
    from rspo.core.profiles import QUICK_LAB

    return f"{100 * random_success(20000, **QUICK_LAB['env_options']):.1f}" == "0.4"


def _reach_rule() -> bool:
    from rspo.study import study2

    return study2.REACH == 0.25


# every percentage in a notebook's prose, with what checks it (None: not a result, and why)
PROSE_PERCENTAGES = {
    ("00_quickstart", "0.4%"): _quick_random_success,  # the lab's random policy at the quick setting
    ("03_sparse_vs_dense_baselines", "0.4%"): _quick_random_success,
    ("00_quickstart", "0%"): None,  # "a learner that sits at 0%": what a figure can show, not a result
    ("05_analysis", "25%"): _reach_rule,  # protocol 2's reach threshold
    ("05_analysis", "95%"): None,  # the intervals' level
}


def test_every_percentage_in_the_notebooks_prose_is_checked():
    found = set()
    for path in NOTEBOOKS:
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                found |= {
                    (path.stem, m) for m in re.findall(r"(?<![\w.])\d+(?:\.\d+)?%", "".join(cell["source"]))
                }
    unchecked = sorted(found - set(PROSE_PERCENTAGES))
    assert not unchecked, f"percentages in notebook prose that nothing checks: {unchecked}"
    for key in found:
        check = PROSE_PERCENTAGES[key]
        assert check is None or check(), f"{key[0]} says {key[1]}, which its check no longer finds"
