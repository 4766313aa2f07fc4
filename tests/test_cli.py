"""The `rspo` command line: play (scripted input), demo, envs, clear errors."""

from __future__ import annotations

import json

import pytest

from rspo import cli


def _play(argv, inputs):
    lines, it = [], iter(inputs)
    args = cli.build_parser().parse_args(["play", *argv])
    rc = cli.play(args, read=lambda prompt: next(it), write=lines.append)
    return rc, "\n".join(lines)


@pytest.mark.parametrize("env", ["household", "shop"])
def test_play_by_numbers_text_help_doc_and_quit(env):
    rc, out = _play([env, "--seed", "0"], ["?", "doc", "0", "zzz not a command", "e", "q"])
    assert rc == 0
    assert "Admissible actions:" in out and "[0] " in out
    assert "valid False" in out and "valid True" in out
    assert "expert:" in out and "Stopped." in out
    assert "process reward" in out and "progress" in out


@pytest.mark.parametrize("env", ["household", "shop"])
def test_play_expert_wins(env):
    rc, out = _play([env, "--expert", "--split", "train", "--task-id", "train/00001"], [])
    assert rc == 0 and "== WON" in out


def test_play_end_of_input_quits():
    def eof(prompt):
        raise EOFError

    args = cli.build_parser().parse_args(["play", "household"])
    lines = []
    assert cli.play(args, read=eof, write=lines.append) == 0


def test_main_reports_bad_input_without_traceback(capsys):
    assert cli.main(["play", "household", "--split", "moon"]) == 2
    err = capsys.readouterr().err
    assert "unknown split" in err and "valid_seen" in err and "Traceback" not in err
    assert cli.main(["play", "shop", "--task-id", "test/99999"]) == 2
    with pytest.raises(SystemExit):
        cli.main(["play", "kitchen"])


def test_envs_lists_both(capsys):
    assert cli.main(["envs"]) == 0
    out = capsys.readouterr().out
    assert "household" in out and "shop" in out


def test_demo_writes_a_table(tmp_path, capsys):
    assert cli.main(["demo", "--limit", "5", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "results.json").read_text())
    assert {(r["env"], r["policy"]) for r in rows} >= {("household", "expert"), ("shop", "random")}
    expert = [r for r in rows if r["policy"] == "expert"]
    assert all(r["success"] == 1.0 for r in expert)
    assert "| env | split | policy |" in (tmp_path / "results.md").read_text()
