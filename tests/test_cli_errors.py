"""rspo.cli's `rspo train`: one-line errors before any model loads, --checkpoint-every 0, --resume semantics
(through rspo.core.checkpoint.check_run_dir and rspo.core.atomic.RunLock). The other commands: tests/test_cli.py.

Rows of docs/reliability.md ("Command-line errors and resume"). Every CLI case asserts exit code 2
(a usage error) or 1, one ``rspo: error:`` line and no traceback, and that no Trainer was built (so no
model or warm start could have loaded): ``Trainer.__init__`` fails the test if it is called.
"""

from __future__ import annotations

import json

import pytest
import torch

import rspo.core.trainer
from rspo import cli
from rspo.core.atomic import RunLock
from rspo.core.checkpoint import check_run_dir, read_checkpoint
from rspo.core.config import TrainConfig
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.trainer import Trainer

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def no_trainer(monkeypatch):
    """Any Trainer built fails the test: the error must come before a model (or warm start) loads."""

    def refuse(self, *a, **kw):
        pytest.fail("a Trainer was built (a model would load) before the error")

    monkeypatch.setattr(rspo.core.trainer.Trainer, "__init__", refuse)


def _error(capsys, argv: list[str], rc: int = 2) -> str:
    assert cli.main(["train", *argv]) == rc
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rspo: error: "), err
    assert "Traceback" not in err
    return lines[0]


# --- --config --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "content, expect",
    [
        (None, "no such file"),
        ("DIR", "is a folder, not a file"),
        ("hello", "is not JSON (Expecting value at line 1, column 1)"),
        ("[1, 2]", "holds an array, not a JSON object"),
        ('"lr"', "holds a string, not a JSON object"),
        ("null", "holds null, not a JSON object"),
        ('{"lr": 0.001, "lrr": 1}', "unknown TrainConfig fields ['lrr'] (did you mean 'lrr' -> 'lr'?)"),
        ('{"colour": "red"}', "unknown TrainConfig fields ['colour']"),
    ],
)
def test_a_bad_config_file_is_one_line_naming_the_file(tmp_path, capsys, no_trainer, content, expect):
    path = tmp_path / "cfg.json"
    if content == "DIR":
        path.mkdir()
    elif content is not None:
        path.write_text(content)
    line = _error(capsys, ["--config", str(path), "--out-dir", str(tmp_path / "runs")])
    assert str(path) in line and expect in line


def test_a_good_config_file_and_flags_make_the_config(tmp_path, monkeypatch):
    made = []

    class Stub:
        def __init__(self, cfg):
            made.append(cfg)

        def run(self):
            return []

    monkeypatch.setattr(rspo.core.trainer, "Trainer", Stub)
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"env": "shop", "lr": 0.001, "seed": 3}))
    assert cli.main(["train", "--config", str(path), "--seed", "4", "--out-dir", str(tmp_path)]) == 0
    assert (made[0].env, made[0].lr, made[0].seed) == ("shop", 0.001, 4)


# --- --out-dir, --model, --temperature -------------------------------------------------------------
def test_an_out_dir_that_is_a_file_is_one_line(tmp_path, capsys, no_trainer):
    f = tmp_path / "afile"
    f.write_text("x")
    assert "afile is a file, not a folder; choose another --out-dir" in _error(capsys, ["--out-dir", str(f)])
    line = _error(capsys, ["--out-dir", str(f / "sub")])
    assert "afile is a file, not a folder" in line
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "r").write_text("x")  # the run folder itself a file
    line = _error(capsys, ["--out-dir", str(tmp_path / "runs"), "--name", "r"])
    assert "is a file, not a folder; choose another --name" in line


def test_an_out_dir_that_cannot_be_written_is_one_line(tmp_path, capsys, no_trainer, monkeypatch):
    import os

    locked = tmp_path / "locked"
    locked.mkdir()
    real = os.access
    # root may write anywhere, so the permission is simulated: os.access says no for this folder
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(locked) else real(p, mode))
    line = _error(capsys, ["--out-dir", str(locked / "new" / "deeper")])
    assert f"cannot write in {locked} (permission denied); choose another --out-dir" in line


@pytest.mark.skipif(
    not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() == 0, reason="root"
)
def test_a_read_only_out_dir_is_refused_for_real(tmp_path, capsys, no_trainer):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        assert "permission denied" in _error(capsys, ["--out-dir", str(locked)])
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("model", ["/nonexistent", "./missing-model", "~/models/x", "a/b/c", "../x", "x y"])
def test_a_missing_local_model_is_one_line(tmp_path, capsys, no_trainer, model):
    line = _error(capsys, ["--model", model, "--out-dir", str(tmp_path)])
    assert f"--model {model}: no such file or folder, and not a hub id" in line


@pytest.mark.parametrize(
    "model", ["Qwen/Qwen2.5-1.5B-Instruct", "gpt2", "HuggingFaceTB/SmolLM2-135M-Instruct"]
)
def test_hub_ids_pass_without_a_download(model):
    cli.check_model(model)  # a pure check: no network here, and none needed


def test_a_missing_gguf_file_in_a_local_model_folder(tmp_path):
    (tmp_path / "m").mkdir()
    with pytest.raises(ValueError, match="--gguf-file x.gguf: no such file in"):
        cli.check_model(str(tmp_path / "m"), "x.gguf")
    (tmp_path / "m" / "x.gguf").write_bytes(b"")
    cli.check_model(str(tmp_path / "m"), "x.gguf")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1"])
def test_a_bad_temperature_is_one_line(tmp_path, capsys, no_trainer, value):
    line = _error(capsys, [f"--temperature={value}", "--out-dir", str(tmp_path)])
    assert "TrainConfig.temperature must be" in line


# --- runs on disk: --checkpoint-every 0, --resume ----------------------------------------------------
def small(tmp_path, **kw) -> TrainConfig:
    """test_trainer's small run, one iteration of 3 steps, named r."""
    from test_trainer import small as trainer_small

    return trainer_small(tmp_path, **{"name": "r", "iterations": 1, "max_steps": 3, **kw})


def train(cfg: TrainConfig) -> Trainer:
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    trainer.run()
    return trainer


@pytest.mark.slow
def test_checkpoint_every_0_saves_only_at_the_end_and_the_help_says_so(tmp_path, monkeypatch):
    saved = []
    real = Trainer.save_checkpoint

    def record(self, extra=None):
        saved.append(self.iteration)
        real(self, extra)

    monkeypatch.setattr(Trainer, "save_checkpoint", record)
    train(small(tmp_path, iterations=3, checkpoint_every=0))
    assert saved == [3]  # before: never
    assert read_checkpoint(tmp_path / "r" / "checkpoint" / "state.pt")["iteration"] == 3
    saved.clear()
    train(small(tmp_path, name="r2", iterations=3, checkpoint_every=2))
    assert saved == [2, 3]
    train_parser = cli.build_parser()._subparsers._group_actions[0].choices["train"]
    (action,) = [a for a in train_parser._actions if a.dest == "checkpoint_every"]
    assert "checkpoint every K iterations and at the end (0: only at the end)" in action.help


def test_resume_of_a_missing_run_is_an_error_unless_asked_to_start_it(tmp_path, capsys, no_trainer):
    line = _error(capsys, ["--resume", "--name", "nothere", "--out-dir", str(tmp_path)])
    assert (
        f"cannot resume {tmp_path / 'nothere'}: no such run folder; drop --resume to start this run" in line
    )
    assert not (tmp_path / "nothere").exists()
    # the library's resume=True (rspo.study.experiments.ensure_run, benchmarks/kill_test.py) still starts it
    check_run_dir(small(tmp_path, name="nothere", resume=True))
    with pytest.raises(ValueError, match="no such run folder"):
        check_run_dir(small(tmp_path, name="nothere", resume=True), must_exist=True)


def test_a_run_already_there_is_refused_before_the_model_loads(tmp_path, capsys, monkeypatch):
    train(small(tmp_path))
    monkeypatch.setattr(rspo.core.trainer.Trainer, "__init__", lambda *a, **k: pytest.fail("model loaded"))
    line = _error(capsys, ["--name", "r", "--out-dir", str(tmp_path)])
    assert "already holds a run; pass resume=True (--resume) to continue it" in line
    line = _error(capsys, ["--resume", "--name", "r", "--out-dir", str(tmp_path), "--lr", "0.01"])
    assert "config differs in" in line and "lr: 0.001 -> 0.01" in line


def test_resume_after_config_json_was_deleted_compares_with_the_checkpoint(tmp_path, capsys, monkeypatch):
    first = train(small(tmp_path))
    (tmp_path / "r" / "config.json").unlink()
    for change, shown in (({"seed": 1}, "seed: 0 -> 1"), ({"lr": 5e-4}, "lr: 0.001 -> 0.0005")):
        cfg = small(tmp_path, resume=True, iterations=2, **change)
        with pytest.raises(ValueError, match="config differs in") as e:
            train(cfg)  # the trainer itself, under the lock
        assert shown in str(e.value) and "from the checkpoint: config.json is missing" in str(e.value)
        with pytest.raises(ValueError, match=shown):
            check_run_dir(cfg, must_exist=True)  # and rspo train's check, before any model
    assert not (tmp_path / "r" / "config.json").exists()  # nothing rewritten by the refused resumes
    (tmp_path / "r" / "config.json").write_text('{"seed": 0, "lr')  # a damaged one: named, and what to do
    with pytest.raises(
        ValueError, match=r"config.json is damaged \(Unterminated string.*delete it to compare"
    ):
        check_run_dir(small(tmp_path, resume=True, iterations=2))
    (tmp_path / "r" / "config.json").unlink()
    resumed = train(small(tmp_path, resume=True, iterations=2))  # the same config continues
    assert resumed.iteration == 2 and json.loads((tmp_path / "r" / "config.json").read_text())["seed"] == 0
    assert first.iteration == 1


def test_resume_without_config_json_and_a_checkpoint_that_records_none_is_refused(tmp_path):
    train(small(tmp_path))
    path = tmp_path / "r" / "checkpoint" / "state.pt"
    state = read_checkpoint(path)
    assert state["config"]["seed"] == 0 and state["config"]["lr"] == 1e-3
    del state["config"]  # as a format-2 checkpoint written before checkpoints recorded the config
    torch.save(state, path)
    (tmp_path / "r" / "config.json").unlink()
    with pytest.raises(
        ValueError, match="config.json is missing and its checkpoint does not record the config"
    ):
        train(small(tmp_path, resume=True, iterations=2, seed=1))
    with pytest.raises(ValueError, match="put the run's config.json back"):
        check_run_dir(small(tmp_path, resume=True, iterations=2))


def test_a_locked_run_folder_is_one_line_with_exit_1(tmp_path, capsys, monkeypatch):
    train(small(tmp_path))
    monkeypatch.setattr(rspo.core.trainer, "load_policy", lambda cfg, device=None: untrained_tiny_policy(0))
    saved = tmp_path / "r.json"  # the run's own config, so that only the lock stands in the way
    saved.write_text((tmp_path / "r" / "config.json").read_text())
    with RunLock(tmp_path / "r"):
        line = _error(capsys, ["--config", str(saved), "--resume", "--iterations", "2"], rc=1)
    assert "is in use by process" in line
