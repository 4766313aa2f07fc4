"""Every `rspo ...` command README.md shows runs (issue 35): a renamed flag or a broken example fails.

The commands are read from README.md - its code blocks (indented or fenced) and its inline code - so
a new example is tested without editing this file. Every one is parsed by the CLI's parser (fast);
every one is also run at reduced size (``rspo train``: one iteration of 2 tasks x 2 copies, horizon
2, the untrained tiny policy instead of the warm start; ``rspo replay``: one iteration), and
``rspo play`` with its input ended at once.
"""

from __future__ import annotations

import io
import re
import shlex
from pathlib import Path

import pytest

from rspo import cli

README = Path(__file__).resolve().parents[1] / "README.md"
# README's placeholders and what the test puts there
PLACEHOLDERS = {"RUN": "results/lab/study2/confirm/L7/detour-grpo-outcome-s20", "K": "1"}
SMALL_TRAIN = ["--iterations", "1", "--tasks-per-iter", "2", "--group-size", "2", "--max-steps", "2"]
SMALL_TRAIN += ["--eval-tasks", "1", "--threads", "1"]


def readme_commands(text: str) -> list[str]:
    """The ``rspo ...`` (or ``.venv/bin/rspo ...``) commands in ``text``'s code blocks and inline code,
    without comments, in order, each once."""
    code = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S)  # fenced blocks
    code += [m.group(1) for m in re.finditer(r"(?:^|\n\n)((?: {4}.*\n?)+)", text)]  # indented blocks
    lines = [line.strip() for block in code for line in block.splitlines()]
    lines += re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))  # inline code
    found: list[str] = []
    for line in lines:
        command = line.split("#", 1)[0].strip()
        if re.match(r"(\.venv/bin/)?rspo \S", command) and command not in found:
            found.append(command)
    return found


COMMANDS = readme_commands(README.read_text())


def argv_of(command: str) -> list[str]:
    words = shlex.split(command)[1:]
    unknown = [w for w in words if re.fullmatch(r"[A-Z][A-Z_]*", w) and w not in PLACEHOLDERS]
    assert not unknown, f"README command {command!r}: add {unknown} to PLACEHOLDERS in {__file__}"
    return [PLACEHOLDERS.get(w, w) for w in words]


def test_the_readme_shows_rspo_commands():
    assert any(c.startswith("rspo train ") for c in COMMANDS), COMMANDS
    assert readme_commands("    rspo envs  # list\n\nText `rspo play shop` and `make x`.\n") == [
        "rspo envs",
        "rspo play shop",
    ]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_readme_command_parses(command):
    args = cli.build_parser().parse_args(argv_of(command))
    assert callable(args.func)


# slow: a replay loads the detour warm start and trains one iteration of the archived run's size
RUNS = [pytest.param(c, marks=pytest.mark.slow) if " replay " in f" {c} " else c for c in COMMANDS]


@pytest.mark.parametrize("command", RUNS)
def test_every_readme_command_runs_at_reduced_size(command, tmp_path, monkeypatch, one_thread):
    argv = argv_of(command)
    if argv[0] == "train":
        from rspo.core.policies.tiny import untrained_tiny_policy

        monkeypatch.setattr(
            "rspo.core.trainer.load_policy",
            lambda cfg, device=None: untrained_tiny_policy(0, value_head=cfg.critic),
        )
        argv += [*SMALL_TRAIN, "--out-dir", str(tmp_path)]
    elif argv[0] == "replay":
        argv += ["--iterations", "1", "--out", str(tmp_path / "replay")]
    elif argv[0] == "demo":
        argv += ["--limit", "2", "--out", str(tmp_path)]
    elif argv[0] == "reproduce":
        pytest.skip("rspo reproduce runs notebooks: tests/test_reproduce.py and tests/test_notebooks.py")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # rspo play: its input ends at the first prompt
    assert cli.main(argv) == 0, command
