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


def test_reproduce_env_flag_is_parsed():
    args = cli.build_parser().parse_args(["reproduce", "--profile", "gpu", "--env", "alfworld"])
    assert (args.profile, args.env) == ("gpu", "alfworld")
    assert cli.build_parser().parse_args(["reproduce"]).env is None


def test_reproduce_env_sets_the_env_parameters_a_notebook_declares(tmp_path):
    pytest.importorskip("papermill")
    from rspo.study.reproduce import NOTEBOOKS_DIR, default_out, parameters, table_parameters

    nb = {p.stem[:2]: p for p in NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb")}
    for stem in ("03", "04", "05"):  # the table notebooks: envs
        params = parameters("gpu", nb[stem], tmp_path, env="alfworld")
        assert params["envs"] == ["alfworld"] and "env_name" not in params
        assert parameters("gpu", nb[stem], tmp_path)["envs"] == ["household", "shop"]  # the profile's
    for stem in ("00", "02", "06"):  # env_name
        params = parameters("gpu", nb[stem], tmp_path, env="alfworld")
        assert params["env_name"] == "alfworld" and "envs" not in params
    assert parameters("gpu", nb["00"], tmp_path)["env_name"] == "shop"
    params = parameters("quick", nb["01"], tmp_path, env="household")  # declares neither
    assert "envs" not in params and "env_name" not in params
    assert parameters("quick", nb["01"], tmp_path) == params
    assert table_parameters("gpu", "alfworld")["envs"] == ["alfworld"]
    assert table_parameters("gpu")["envs"] == ["household", "shop"]
    assert default_out("gpu", "alfworld").name == "reproduce-gpu-alfworld"
    assert default_out("gpu").name == "reproduce-gpu"


def test_reproduce_env_trains_and_warm_starts_that_env_only(tmp_path, monkeypatch):
    pytest.importorskip("papermill")
    import rspo.core.sft as sft
    import rspo.study.reproduce as job

    job.check_env("quick", "household")  # a built-in: it builds and resets
    done, missing = job.table_status("quick", tmp_path, "household")  # nothing trains
    assert not done and missing and {c.env for c in missing} == {"household"}
    built = []
    monkeypatch.setattr(sft, "build_default", lambda env, cfg: built.append(env) or (tmp_path / env).mkdir())
    monkeypatch.setattr(sft, "default_policy_path", lambda env, cfg: tmp_path / env)
    job.ensure_warm_starts("quick", lambda *_: None, env="household")
    assert built == ["household"]


def _no_notebooks(monkeypatch):
    import rspo.study.reproduce as job

    def fail(*args, **kwargs):
        raise AssertionError("a notebook step ran before --env was checked")

    monkeypatch.setattr(job, "ensure_warm_starts", fail)
    monkeypatch.setattr(job, "ensure_table_runs", fail)
    monkeypatch.setattr(job, "notebooks", fail)


def test_reproduce_rejects_an_unknown_env_in_one_line(tmp_path, monkeypatch, capsys):
    _no_notebooks(monkeypatch)
    out = tmp_path / "out"
    assert cli.main(["reproduce", "--env", "kitchen", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'kitchen'" in err and "household" in err and "alfworld" in err
    # an adapter has no offline warm start: only a profile with a named model trains it
    assert cli.main(["reproduce", "--profile", "quick", "--env", "alfworld", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--profile gpu" in err
    assert not out.exists()


def test_reproduce_env_alfworld_without_data_is_the_adapters_one_line_error(tmp_path, monkeypatch, capsys):
    from rspo.core.envs.alfworld.env import DATA_HELP

    _no_notebooks(monkeypatch)
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    out = tmp_path / "out"
    assert cli.main(["reproduce", "--profile", "gpu", "--env", "alfworld", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"rspo: error: ALFWorld data not found: ALFWORLD_DATA is not set; {DATA_HELP}\n"
    assert "alfworld-download" in err and not out.exists()
