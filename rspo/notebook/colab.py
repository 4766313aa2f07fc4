"""Open-in-Colab badges for the numbered notebooks, written into notebooks/README.md.

The public GitHub URL of the repository is only known to whoever publishes it, so the badges are
written by one command then: ``rspo badges --repo OWNER/NAME`` (or ``rspo badges`` in a clone whose
``origin`` is on GitHub).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from urllib.parse import quote

BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
COLAB_GITHUB = "https://colab.research.google.com/github"

ACCEPTED_FORMS = (
    "owner/name, https://github.com/owner/name, https://github.com/owner/name.git "
    "or git@github.com:owner/name.git"
)

_PART = r"[A-Za-z0-9_.-]+"
_REPO_FORMS = (
    re.compile(rf"(?P<owner>{_PART})/(?P<name>{_PART})"),
    re.compile(rf"https?://(?:www\.)?github\.com/(?P<owner>{_PART})/(?P<name>{_PART})/?"),
    re.compile(rf"git@github\.com:(?P<owner>{_PART})/(?P<name>{_PART})/?"),
    re.compile(rf"ssh://git@github\.com(?::22)?/(?P<owner>{_PART})/(?P<name>{_PART})/?"),
)

# A table row whose first cell links a numbered notebook, e.g. ``| [`00_x.ipynb`](00_x.ipynb) | ... |``.
_NOTEBOOK_LINK = re.compile(r"\]\(\s*(?:\./)?(?P<file>\d\d_[^)\s/]*\.ipynb)\s*\)")
# The last cell of a row: everything between the last two pipes (cells hold no bare pipe).
_LAST_CELL = re.compile(r"^(?P<head>.*\|)(?P<last>[^|]*)\|(?P<tail>[ \t]*)$")


def parse_repo(repo: str) -> str:
    """``owner/name`` from any accepted form of a GitHub repository; ValueError for anything else."""
    text = repo.strip()
    for form in _REPO_FORMS:
        m = form.fullmatch(text)
        if m:
            owner, name = m["owner"], m["name"]
            if name.endswith(".git"):
                name = name[: -len(".git")]
            if owner in (".", "..") or name in ("", ".", ".."):
                break
            return f"{owner}/{name}"
    raise ValueError(
        f"not a GitHub repository: {repo!r}; accepted forms: {ACCEPTED_FORMS} "
        "(owner and name: letters, digits, '-', '_' and '.')"
    )


def badge(repo: str, notebook_path: str, branch: str = "main") -> str:
    """The Markdown Open-in-Colab badge for ``notebook_path`` (relative to the repository root)."""
    owner_name = parse_repo(repo)
    if not branch or any(c.isspace() for c in branch):
        raise ValueError(f"not a branch name: {branch!r}")
    path = notebook_path.strip().lstrip("/")
    if path.startswith("./"):
        path = path[2:]
    if not path:
        raise ValueError("empty notebook path")
    url = f"{COLAB_GITHUB}/{owner_name}/blob/{quote(branch, safe='/')}/{quote(path, safe='/')}"
    return f"[![Open In Colab]({BADGE_IMAGE})]({url})"


def repo_from_git(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """``owner/name`` of the ``origin`` remote if it is on GitHub, else None (never raises)."""
    try:
        out = subprocess.run(
            ["git", "remote", "get-url", "origin"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    try:
        return parse_repo(out.stdout.strip())
    except ValueError:
        return None


def write_badges(
    readme_path: str | os.PathLike[str],
    repo: str,
    branch: str = "main",
    notebooks_dir: str = "notebooks",
) -> int:
    """Put a Colab badge in the last cell of every notebook row of the table in ``readme_path``.

    A notebook row is a table row whose first cell links a ``NN_*.ipynb`` file (relative to the
    notebooks folder, so the badge opens ``<notebooks_dir>/<file>``). Whatever the last cell holds is
    replaced; every other line stays byte-identical. Returns the number of rows changed (0 when the
    badges are already there); ValueError when the file has no notebook row.
    """
    path = Path(readme_path)
    text = path.read_bytes().decode("utf-8")
    lines = text.splitlines(keepends=True)
    rows = changed = 0
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        if not body.lstrip().startswith("|"):
            continue
        cells = body.split("|")
        if len(cells) < 4:  # "", first cell, ..., last cell, ""
            continue
        link = _NOTEBOOK_LINK.search(cells[1])
        m = _LAST_CELL.match(body)
        if link is None or m is None:
            continue
        rows += 1
        notebook = notebooks_dir.rstrip("/") + "/" + link["file"]
        cell = f" {badge(repo, notebook, branch)} "
        new = f"{m['head']}{cell}|{m['tail']}{ending}"
        if new != line:
            lines[i] = new
            changed += 1
    if rows == 0:
        raise ValueError(f"{path}: no table row links a NN_*.ipynb notebook")
    if changed:
        path.write_bytes("".join(lines).encode("utf-8"))
    return changed
