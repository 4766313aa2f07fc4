"""Open-in-Colab badges: the badge URL, the origin remote, rewriting notebooks/README.md, `rspo badges`."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rspo import cli
from rspo.notebook.colab import badge, parse_repo, repo_from_git, write_badges

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "notebooks" / "README.md"
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
ROW = re.compile(r"^\| \[`(?P<nb>\d\d_[^`]+\.ipynb)`\]\((?P=nb)\) \|.*\| (?P<last>[^|]*) \|$")


def _colab(owner_name, path, branch="main"):
    url = f"https://colab.research.google.com/github/{owner_name}/blob/{branch}/{path}"
    return f"[![Open In Colab]({IMAGE})]({url})"


@pytest.mark.parametrize(
    "repo",
    [
        "owner/name",
        "https://github.com/owner/name",
        "https://github.com/owner/name.git",
        "git@github.com:owner/name.git",
        "https://github.com/owner/name/",
        " owner/name ",
    ],
)
def test_badge_for_each_accepted_repo_form(repo):
    assert badge(repo, "notebooks/00_quickstart.ipynb") == (
        "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        "(https://colab.research.google.com/github/owner/name/blob/main/notebooks/00_quickstart.ipynb)"
    )
    assert badge(repo, "notebooks/00_quickstart.ipynb", branch="dev") == _colab(
        "owner/name", "notebooks/00_quickstart.ipynb", "dev"
    )


def test_badge_keeps_dots_dashes_underscores():
    assert parse_repo("My-Org_1/rspo.kit") == "My-Org_1/rspo.kit"
    assert parse_repo("git@github.com:a-b/c.d.git") == "a-b/c.d"
    assert badge("a-b/c.d", "notebooks/x.ipynb") == _colab("a-b/c.d", "notebooks/x.ipynb")


@pytest.mark.parametrize(
    "repo",
    [
        "",
        "name",
        "owner/name/extra",
        "owner/na me",
        "owner/name)",
        "own$er/name",
        "https://gitlab.com/owner/name",
        "https://github.com/owner",
        "https://github.com/owner/name/tree/main",
        "git@gitlab.com:owner/name.git",
        "../name",
        "owner/..",
        "owner/.git",
    ],
)
def test_bad_repo_forms_raise(repo):
    with pytest.raises(ValueError, match="accepted forms: owner/name, https://github.com/owner/name"):
        badge(repo, "notebooks/00_quickstart.ipynb")


def test_bad_branch_raises():
    with pytest.raises(ValueError, match="branch"):
        badge("owner/name", "notebooks/00_quickstart.ipynb", branch="a b")


@pytest.fixture
def readme(tmp_path):
    copy = tmp_path / "README.md"
    shutil.copyfile(README, copy)
    return copy


def _rows(text):
    return {m["nb"]: m["last"] for m in map(ROW.match, text.splitlines()) if m}


def test_the_real_readme_has_a_row_per_notebook_and_no_badge_yet():
    rows = _rows(README.read_text())
    assert sorted(rows) == NOTEBOOKS and len(rows) == 7
    assert all(last.startswith("no badge yet") for last in rows.values())


def test_write_badges_on_a_copy_of_the_readme(readme):
    before = readme.read_bytes().decode().splitlines(keepends=True)
    assert write_badges(readme, "https://github.com/owner/name.git") == 7
    after = readme.read_bytes().decode().splitlines(keepends=True)
    assert len(after) == len(before)
    rows = _rows("".join(after))
    assert sorted(rows) == NOTEBOOKS
    for nb, last in rows.items():
        assert last == _colab("owner/name", f"notebooks/{nb}")
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert len(changed) == 7
    for i in changed:  # only the last cell of the notebook rows changed
        assert ROW.match(after[i].rstrip("\n"))
        assert after[i].rsplit("|", 2)[0] == before[i].rsplit("|", 2)[0]
    for a, b in zip(before, after, strict=True):
        if not a.startswith("|"):
            assert a == b

    once = readme.read_bytes()
    assert write_badges(readme, "owner/name") == 0  # idempotent
    assert readme.read_bytes() == once

    assert write_badges(readme, "owner/name", branch="dev") == 7
    rows = _rows(readme.read_text())
    assert all(last == _colab("owner/name", f"notebooks/{nb}", "dev") for nb, last in rows.items())
    assert write_badges(readme, "other/repo") == 7
    assert all(
        "/github/other/repo/blob/main/notebooks/" in last for last in _rows(readme.read_text()).values()
    )


def test_write_badges_without_notebook_rows_raises(tmp_path):
    path = tmp_path / "README.md"
    path.write_text("# Notebooks\n\n| a | b |\n|---|---|\n| x | y |\n")
    with pytest.raises(ValueError, match="no table row links"):
        write_badges(path, "owner/name")
    assert path.read_text() == "# Notebooks\n\n| a | b |\n|---|---|\n| x | y |\n"


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_repo_from_git(tmp_path):
    assert repo_from_git(tmp_path / "does-not-exist") is None
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "test@example.com")
    _git(tmp_path, "config", "user.name", "test")
    assert repo_from_git(tmp_path) is None  # no remote
    _git(tmp_path, "remote", "add", "origin", "https://gitlab.com/a-b/c.d.git")
    assert repo_from_git(tmp_path) is None  # not GitHub
    _git(tmp_path, "remote", "set-url", "origin", "https://github.com/a-b/c.d.git")
    assert repo_from_git(tmp_path) == "a-b/c.d"
    _git(tmp_path, "remote", "set-url", "origin", "git@github.com:a-b/c.d.git")
    assert repo_from_git(str(tmp_path)) == "a-b/c.d"


def test_cli_without_repo_exits_2_with_a_message(readme, tmp_path):
    _git(tmp_path, "init", "-q")  # a folder of its own, without a remote
    out = subprocess.run(
        [sys.executable, "-m", "rspo.cli", "badges", "--readme", str(readme)],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2, out.stderr
    assert "--repo" in out.stderr and "public GitHub repository" in out.stderr
    assert readme.read_bytes() == README.read_bytes()


def test_cli_writes_badges(readme, tmp_path, monkeypatch, capsys):
    _git(tmp_path, "init", "-q")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["badges", "--readme", str(readme), "--repo", "git@github.com:owner/name.git"]) == 0
    assert f"updated {readme}: 7 Colab badge(s) for owner/name (branch main)" in capsys.readouterr().out
    _git(tmp_path, "remote", "add", "origin", "https://github.com/a-b/c.d")
    assert cli.main(["badges", "--readme", str(readme), "--branch", "dev"]) == 0
    assert "7 Colab badge(s) for a-b/c.d (branch dev)" in capsys.readouterr().out
    assert all(
        last == _colab("a-b/c.d", f"notebooks/{nb}", "dev") for nb, last in _rows(readme.read_text()).items()
    )
    assert cli.main(["badges", "--readme", str(readme), "--branch", "dev"]) == 0
    assert "already up to date" in capsys.readouterr().out
    assert cli.main(["badges", "--readme", str(tmp_path / "missing.md"), "--repo", "o/n"]) == 2
    assert "no such file" in capsys.readouterr().err
