"""The package's folders point one way: notebook -> study -> core (the CLI, on top, may import any).

Every ``import rspo...`` and ``from rspo... import`` in the package, at module level or inside a
function, is read from the source; a module of a lower layer naming a higher one fails the test.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "rspo"
RANK = {"core": 0, "study": 1, "notebook": 2, "cli": 3}


def layer(dotted: str) -> str | None:
    """``rspo.core.envs.base`` -> ``core``; ``rspo`` itself (its version) has no layer."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "rspo" else None


def imported(source: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every rspo module a source imports; ``from rspo import x`` names rspo.x."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("rspo")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("rspo"):
            if node.module == "rspo":
                out += [(node.lineno, f"rspo.{a.name}") for a in node.names]
            else:
                out.append((node.lineno, node.module))
    return out


def upward(path: Path) -> list[str]:
    here = layer(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
    return [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for line, name in imported(path.read_text(encoding="utf-8"))
        if here in RANK and layer(name) in RANK and RANK[layer(name)] > RANK[here]
    ]


def test_every_module_lives_in_a_layer():
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "cli"))
    assert loose == [], f"modules outside core/, study/ and notebook/: {loose}"
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} == {
        "core",
        "study",
        "notebook",
    }


def test_no_import_points_up():
    found = [line for p in sorted(PACKAGE.rglob("*.py")) for line in upward(p)]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize(
    "lower, source",
    [
        ("core/swap.py", "from rspo.study import claims\n"),
        ("core/envs/base.py", "def f():\n    import rspo.notebook.plots\n"),
        ("study/claims.py", "from rspo.notebook import plots\n"),
        ("study/report.py", "from rspo import cli\n"),
    ],
)
def test_an_upward_import_is_caught(tmp_path, monkeypatch, lower, source):
    fake = tmp_path / "rspo" / lower
    fake.parent.mkdir(parents=True)
    fake.write_text(source)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "rspo")
    assert len(upward(fake)) == 1
