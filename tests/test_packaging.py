"""Install metadata: pyproject.toml and environment.yml agree; the console script is wired."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _norm(req: str) -> str:
    return re.sub(r"\s+", "", req).lower()


def test_environment_yml_agrees_with_pyproject():
    project = _pyproject()["project"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    python = next(d for d in deps if isinstance(d, str) and d.startswith("python"))
    assert python.split("=")[-1] == project["requires-python"].removeprefix(">=")
    pip = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    assert "-e ." in pip, "environment.yml must install the package itself"
    pip_reqs = sorted(_norm(r) for r in pip if r != "-e .")
    assert pip_reqs == sorted(_norm(r) for r in project["dependencies"])


def test_dependencies_are_ranges_not_pins():
    for req in _pyproject()["project"]["dependencies"]:
        assert "==" not in req, f"{req}: the package requires ranges (Colab has its own torch)"


def test_console_script_and_extras_declared():
    project = _pyproject()["project"]
    assert project["scripts"]["rspo"] == "rspo.cli:main"
    assert {"dev", "textworld", "alfworld"} <= set(project["optional-dependencies"])


def test_import_is_cheap():
    code = "import sys, rspo, rspo.core.envs; heavy = {'torch', 'transformers', 'trl', 'peft', 'accelerate'}; print(sorted(heavy & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_ci_calls_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make test" in ci
    assert "make demo" in readme


def test_constraints_pin_every_dependency_inside_pyprojects_ranges():
    """``make venv`` installs with constraints.txt: each of the kit's direct dependencies (torch apart:
    TORCH_SPEC) is pinned there, to a version pyproject's range allows."""
    from packaging.requirements import Requirement

    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    project = _pyproject()["project"]
    for spec in project["dependencies"] + project["optional-dependencies"]["dev"]:
        req = Requirement(spec)
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name == "torch":
            continue
        assert name in pins, f"{name} is not pinned in constraints.txt"
        assert req.specifier.contains(pins[name]), (
            f"constraints.txt pins {name}=={pins[name]}, outside {spec}"
        )
    assert "-c constraints.txt" in (ROOT / "Makefile").read_text()
