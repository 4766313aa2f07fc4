"""The rules a resume is checked by, on run folders built by hand (no model, no training: fast).

`rspo.core.checkpoint.check_resume` (the config, the run id, the checkpoint against the metrics),
`_metrics_lines` (what a kill may leave in metrics.jsonl), `save_checkpoint` (what a checkpoint
holds, and what it refuses to write). The same rules through `rspo train` and real runs are in
tests/test_reliability2.py; these pin every boundary (issue 33 item 6: the mutants of these functions
that the fast suite let through)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from test_trainer import small as _small

from rspo.core.checkpoint import (
    FORMAT,
    _metrics_iterations,
    _metrics_lines,
    check_resume,
    check_state,
    load_checkpoint,
    read_checkpoint,
    save_checkpoint,
)
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.trainer import Trainer

A, B = "a" * 32, "b" * 32  # two run ids


def conf(tmp_path, **kw):
    """tests/test_trainer.py's small config, in one folder whatever the seed (the name follows it)."""
    return _small(tmp_path, name="r", **kw)


def folder(
    tmp_path: Path,
    cfg,
    rows: list[int] | None = None,
    at: int | None = None,
    run_id: str | None = A,
    state_id: str | None = A,
    config: bool = True,
    recorded=True,
) -> Path:
    """A run folder as a run leaves it: ``config.json`` (``config``), ``run_id`` (``run_id``), the
    metrics rows of ``rows`` (None: no metrics file) and a checkpoint at iteration ``at`` (None: none)
    holding ``state_id`` and, with ``recorded``, the config (True: ``cfg``'s; a dict: that)."""
    run = cfg.run_dir
    run.mkdir(parents=True)
    if config:
        cfg.save(run / "config.json")
    if run_id is not None:
        (run / "run_id").write_text(run_id + "\n")
    if rows is not None:
        (run / "metrics.jsonl").write_text("".join(json.dumps({"iteration": i}) + "\n" for i in rows))
    if at is not None:
        state = {"format": FORMAT, "iteration": at, "env_steps": 8 * at, "policy": {}, "optimizer": {}}
        if recorded is True:
            state["config"] = cfg.to_dict()
        elif recorded is not False:
            state["config"] = recorded
        if state_id is not None:
            state["run_id"] = state_id
        (run / "checkpoint").mkdir()
        torch.save(state, run / "checkpoint" / "state.pt")
    return run


def resumes_at_1_or_refused(cfg, error: str | None) -> None:
    """The folder of a run checkpointed at iteration 1 resumes (``error`` None), or is refused with ``error``."""
    if error is None:
        assert check_resume(cfg, cfg.run_dir)["iteration"] == 1
    else:
        refused(cfg, error)


def refused(cfg, match: str) -> str:
    with pytest.raises(ValueError, match=match) as e:
        check_resume(cfg, cfg.run_dir)
    line = str(e.value)
    assert "\n" not in line
    return line


# --- without a checkpoint: only rows up to the first checkpoint may be there -----------------------------
@pytest.mark.parametrize(
    ("every", "iterations", "rows", "ok"),
    [
        (2, 5, None, True),  # a folder with nothing in it yet
        (2, 5, [], True),
        (2, 5, [1, 2], True),  # killed while saving the first checkpoint: rows 1-2 written again
        (2, 5, [1, 2, 3], False),  # a row past the first checkpoint: the checkpoint was there
        (0, 3, [1, 2, 3], True),  # no checkpoint before the end: the first is the last iteration's
        (10, 3, [1, 2, 3], True),  # an interval past the end: the same
        (1, 3, [1], True),
        (1, 3, [1, 2], False),
    ],
)
def test_without_a_checkpoint_rows_up_to_the_first_checkpoint_start_again(
    tmp_path, every, iterations, rows, ok
):
    cfg = conf(tmp_path, iterations=iterations, checkpoint_every=every, resume=True)
    folder(tmp_path, cfg, rows=rows)
    if ok:
        assert check_resume(cfg, cfg.run_dir) is None
        return
    line = refused(
        cfg, f"its checkpoint .*state.pt is missing but metrics.jsonl records iterations up to {max(rows)}"
    )
    assert "resuming would start again and drop them" in line and line.endswith(
        "start the run again without --resume in another folder"
    )


def test_without_a_checkpoint_the_interval_is_the_one_the_run_was_started_with(tmp_path):
    """``checkpoint_every`` may change on a resume: the rows already written follow the old one."""
    cfg = conf(tmp_path, iterations=6, checkpoint_every=3, resume=True)
    started = conf(tmp_path, iterations=6, checkpoint_every=1)
    run = folder(tmp_path, started, rows=[1, 2])  # a run saving every iteration has a checkpoint at 1
    refused(cfg, "records iterations up to 2")
    (run / "config.json").unlink()  # no saved config: the new one is all there is
    assert check_resume(cfg, run) is None


def test_the_folder_or_its_checkpoint_folder_being_a_file_is_refused(tmp_path):
    cfg = conf(tmp_path, resume=True)
    cfg.run_dir.write_text("x")
    refused(cfg, f"{cfg.run_dir} is a file, not a folder; remove it or choose another --name")
    cfg.run_dir.unlink()
    cfg.run_dir.mkdir()
    (cfg.run_dir / "checkpoint").write_text("x")
    refused(cfg, "checkpoint is a file, not a folder")


# --- with a checkpoint: every row before it there, none more than an interval after ---------------------
@pytest.mark.parametrize(
    ("every", "iterations", "at", "rows", "error"),
    [
        (1, 4, 2, [1, 2], None),
        (1, 4, 2, [1, 2, 3], None),  # killed after row 3, before its checkpoint: row 3 goes
        (1, 4, 2, [1, 2, 3, 4], "records iterations up to 4 but the checkpoint .* drop iterations 3-4"),
        (2, 6, 2, [1, 2, 3, 4], None),  # up to one interval (2) past it
        (2, 6, 2, [1, 2, 3, 4, 5], "records iterations up to 5 .* drop iterations 3-5"),
        (2, 3, 2, [1, 2, 3], None),  # the interval ends at the last iteration
        (2, 3, 2, [1, 2, 3, 4], "records iterations up to 4"),  # and never reaches past it
        (0, 5, 2, [1, 2, 3, 4, 5], None),  # no interval: the checkpoint at the end is the next one
        (1, 4, 2, [1], "metrics.jsonl ends at iteration 1 but the checkpoint .* is at 2: rows are missing"),
        (1, 4, 2, [], "metrics.jsonl ends at iteration 0 but the checkpoint"),
        (1, 4, 1, [], "metrics.jsonl ends at iteration 0 but the checkpoint .* is at 1"),  # no row at all
        (1, 4, 2, [2], None),  # the rows' last iteration decides, not their number
        (1, 4, 2, None, "metrics.jsonl is missing but the checkpoint is at iteration 2: resuming would lose"),
    ],
)
def test_the_metrics_against_the_checkpoint(tmp_path, every, iterations, at, rows, error):
    cfg = conf(tmp_path, iterations=iterations, checkpoint_every=every, resume=True)
    folder(tmp_path, cfg, rows=rows, at=at)
    if error is None:
        state = check_resume(cfg, cfg.run_dir)
        assert (state["iteration"], state["env_steps"], state["run_id"]) == (at, 8 * at, A)
        return
    line = refused(cfg, error)
    assert str(cfg.run_dir / "checkpoint" / "state.pt") in line or "metrics.jsonl is missing" in line
    assert line.startswith(f"cannot resume {cfg.run_dir}: ")
    assert line.endswith("or start the run again without --resume in another folder")  # the way out
    if rows is None:
        assert "iterations 1-2's rows" in line


def test_with_a_checkpoint_the_interval_is_the_one_the_run_was_started_with(tmp_path):
    cfg = conf(tmp_path, iterations=8, checkpoint_every=4, resume=True)
    run = folder(tmp_path, conf(tmp_path, iterations=8, checkpoint_every=1), rows=[1, 2, 3, 4], at=2)
    refused(cfg, "records iterations up to 4 but the checkpoint")  # saved every iteration: 3 was saved
    (run / "config.json").unlink()  # the checkpoint's recorded config is compared, the new interval used
    assert check_resume(cfg, run)["iteration"] == 2


def test_a_config_json_behind_the_checkpoint_refuses_no_row_up_to_the_checkpoint(tmp_path):
    """A checkpoint past the saved config's last iteration (that config's interval ends before it):
    the rows up to the checkpoint itself are never too far."""
    cfg = conf(tmp_path, iterations=5, checkpoint_every=1, resume=True)
    run = folder(tmp_path, cfg, rows=[1, 2, 3], at=3)
    conf(tmp_path, iterations=2, checkpoint_every=1).save(run / "config.json")
    assert check_resume(cfg, run)["iteration"] == 3


def test_the_checkpoints_iteration_is_checked_before_the_metrics(tmp_path):
    cfg = conf(tmp_path, iterations=2, resume=True)
    folder(tmp_path, conf(tmp_path, iterations=3), rows=[1, 2, 3], at=3)
    refused(cfg, r"is at iteration 3, past iterations=2.*--iterations 3 or more")


# --- the config and the run id ---------------------------------------------------------------------------
def test_a_changed_setting_is_refused_against_config_json_and_the_checkpoints_config(tmp_path):
    cfg = conf(tmp_path, resume=True)
    run = folder(tmp_path, conf(tmp_path, seed=7), rows=[1], at=1, recorded=conf(tmp_path, seed=7).to_dict())
    line = refused(cfg, r"config differs in seed: 7 -> 0$")
    assert line.startswith(f"cannot resume {run}:")
    cfg.save(run / "config.json")  # config.json agrees now; the checkpoint's own config does not
    line = refused(cfg, r"config differs in seed: 7 -> 0 \(the config .*state.pt records: another run's")
    assert line.startswith(f"cannot resume {run}:")
    (run / "config.json").unlink()
    line = refused(cfg, r"seed: 7 -> 0 \(from the checkpoint: config.json is missing\)$")
    assert line.startswith(f"cannot resume {run}:")
    (run / "config.json").write_bytes(b"\xff\xfe")  # a damaged config.json: the error names the run too
    assert refused(cfg, "config.json is not UTF-8 text").startswith(f"cannot resume {run}:")


def test_settings_that_may_change_on_a_resume_are_not_compared(tmp_path):
    cfg = conf(tmp_path, iterations=9, eval_every=3, checkpoint_every=2, progress=True, resume=True)
    folder(tmp_path, conf(tmp_path), rows=[1], at=1)
    assert check_resume(cfg, cfg.run_dir)["iteration"] == 1


@pytest.mark.parametrize(
    ("recorded", "config", "error"),
    [
        (False, True, None),  # a checkpoint of a kit that recorded no config: config.json guards it
        (True, False, None),  # config.json deleted: the checkpoint's config guards it
        (
            False,
            False,
            "config.json is missing and its checkpoint does not record the config, .* without --resume "
            r"\(in another folder, or after deleting this one\)$",
        ),
        ([1, 2], True, "the checkpoint's recorded config is not a dict: damaged"),
        ({"seed": 0, "colour": "red"}, True, "the checkpoint's recorded config is not valid"),
    ],
)
def test_the_config_a_checkpoint_records(tmp_path, recorded, config, error):
    cfg = conf(tmp_path, resume=True)
    folder(tmp_path, cfg, rows=[1], at=1, recorded=recorded, config=config)
    resumes_at_1_or_refused(cfg, error)


@pytest.mark.parametrize(
    ("run_id", "state_id", "error"),
    [
        (A, A, None),
        (None, None, None),  # a run started before runs had ids: its config guards it
        (A, B, f"is another run's checkpoint \\(run id {B}, this run {A}\\)"),
        (None, B, f"belongs to run {B} but the folder has no run_id file: .* \\(holding {B}\\)"),
        (A, None, f"another run's checkpoint \\(run id None, this run {A}\\)"),
    ],
)
def test_the_run_id_of_the_checkpoint_and_of_the_folder(tmp_path, run_id, state_id, error):
    cfg = conf(tmp_path, resume=True)
    folder(tmp_path, cfg, rows=[1], at=1, run_id=run_id, state_id=state_id)
    resumes_at_1_or_refused(cfg, error)


# --- metrics.jsonl as a kill leaves it -------------------------------------------------------------------
def test_metrics_lines_reads_each_rows_iteration_and_marks_damaged_lines(tmp_path):
    path = tmp_path / "metrics.jsonl"
    assert _metrics_lines(path) is None and _metrics_iterations(path) is None
    lines = [
        '{"iteration": 1, "success": 0.5}',
        "",  # blank lines are not rows
        "   ",
        '{"iteration": 2}',
        '{"iteration": "3"}',  # not an integer
        '{"iteration": true}',  # a bool is not an iteration
        '{"iteration": 4.0}',
        '{"step": 5}',
        "[5]",
        '{"iteration": 6',  # cut by a kill
        "[" * 100_000,  # nested too deeply for json
        '{"iteration": 7}',
    ]
    path.write_text("\n".join(lines) + "\n")
    assert _metrics_lines(path) == [1, 2, None, None, None, None, None, None, None, 7]
    assert _metrics_iterations(path) == [1, 2, 7]
    path.write_text("")
    assert _metrics_lines(path) == [] and _metrics_iterations(path) == []


def test_metrics_lines_refuses_a_folder_and_text_that_is_not_utf8(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b'{"iteration": 1}\n\xff\xfe\n')
    with pytest.raises(ValueError, match=r"metrics.jsonl is not UTF-8 text \(byte 17\): damaged; put the"):
        _metrics_lines(path)
    path.unlink()
    path.mkdir()
    with pytest.raises(
        ValueError, match=r"is a folder, not a file \(metrics file\); put the run's file back"
    ):
        _metrics_lines(path)


def test_a_dangling_metrics_link_is_an_error_not_a_missing_file(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.symlink_to(tmp_path / "gone")
    with pytest.raises(ValueError, match="no such file"):
        _metrics_lines(path)


# --- check_state: what every checkpoint holds -----------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"iteration": 1}, None),
        ({"iteration": 5}, None),
        ({"iteration": 6}, "past iterations=5"),
        ({"iteration": True}, "iteration True is not a whole number"),
        ({"env_steps": True}, "env_steps True is not a count"),
        ({"policy": [1]}, "the checkpoint's policy is a list, not a dict"),
        ({"optimizer": None}, "the checkpoint's optimizer is a NoneType, not a dict"),
        ({"extra": []}, "the checkpoint's extra is not a dict"),
        ({"extra": {}}, None),
    ],
)
def test_check_state_field_by_field(tmp_path, change, error):
    state = {"iteration": 2, "env_steps": 3, "policy": {}, "optimizer": {}, **change}
    cfg = conf(tmp_path, iterations=5)
    if error is None:
        check_state(state, tmp_path / "s.pt", cfg)
        return
    with pytest.raises(ValueError, match=error) as e:
        check_state(state, tmp_path / "s.pt", cfg)
    assert str(e.value).startswith(f"{tmp_path / 's.pt'}: ")


def test_check_state_names_every_missing_key_and_needs_no_config(tmp_path):
    with pytest.raises(ValueError, match=r"s.pt: the checkpoint lacks iteration, optimizer: damaged or not"):
        check_state({"env_steps": 0, "policy": {}}, tmp_path / "s.pt")
    check_state({"iteration": 10**6, "env_steps": 0, "policy": {}, "optimizer": {}}, tmp_path / "s.pt")


# --- save_checkpoint -------------------------------------------------------------------------------------
class Saving:
    """The part of a trainer a checkpoint is saved from."""

    def __init__(self, run_dir: Path, cfg=None, run_id=None, extra=None):
        self.run_dir, self.iteration, self.env_steps = run_dir, 3, 57
        self.policy = torch.nn.Linear(2, 2)
        self.policy.named_trainable_parameters = self.policy.named_parameters
        self.optimizer = torch.optim.SGD(self.policy.parameters(), lr=0.1, momentum=0.9)
        self.policy(torch.ones(1, 2)).sum().backward()
        self.optimizer.step()  # a momentum buffer: an optimizer state worth saving
        if cfg is not None:
            self.cfg = cfg
        if run_id is not None:
            self.run_id = run_id
        if extra is not None:
            self.checkpoint_extra = lambda: dict(extra)


def test_save_checkpoint_writes_what_a_resume_reads(tmp_path):
    cfg = conf(tmp_path)
    trainer = Saving(tmp_path / "r", cfg=cfg, run_id=A, extra={"successes": ["x"], "k": 1})
    path = save_checkpoint(trainer, extra={"k": 2})
    assert path == tmp_path / "r" / "checkpoint" / "state.pt"
    state = read_checkpoint(path)
    assert (state["format"], state["iteration"], state["env_steps"], state["run_id"]) == (FORMAT, 3, 57, A)
    assert state["extra"] == {"successes": ["x"], "k": 2}  # the call's extra over the trainer's
    assert state["config"] == cfg.to_dict()
    assert sorted(state["policy"]) == ["bias", "weight"]
    assert torch.equal(state["policy"]["weight"], trainer.policy.weight.detach())
    momentum = state["optimizer"]["state"][0]["momentum_buffer"]
    assert torch.equal(momentum, trainer.optimizer.state_dict()["state"][0]["momentum_buffer"])
    assert [p.name for p in path.parent.iterdir()] == ["state.pt"]  # no temporary file left


def test_save_checkpoint_of_a_bare_trainer_records_no_config_or_run_id(tmp_path):
    trainer = Saving(tmp_path / "r")
    trainer.cfg, trainer.run_id = {"seed": 0}, 5  # neither a TrainConfig nor an id: not recorded
    state = read_checkpoint(save_checkpoint(trainer))
    assert "config" not in state and "run_id" not in state and state["extra"] == {}


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_save_checkpoint_refuses_weights_that_are_not_finite_and_keeps_the_last_checkpoint(tmp_path, bad):
    trainer = Saving(tmp_path / "r")
    path = save_checkpoint(trainer)
    before = path.read_bytes()
    with torch.no_grad():
        trainer.policy.bias[1] = bad
    trainer.iteration = 4
    with pytest.raises(
        RuntimeError, match=r"^refusing to write a checkpoint at iteration 4: policy parameter bias"
    ):
        save_checkpoint(trainer)
    assert path.read_bytes() == before
    with torch.no_grad():
        trainer.policy.bias[1] = 0.0
    explorer = {"w": torch.tensor([1.0, bad]), "steps": torch.tensor([3])}  # an integer tensor is not checked
    with pytest.raises(
        RuntimeError,
        match=r"^refusing to write a checkpoint at iteration 4: explorer parameter w is not finite \(nan/inf\)",
    ):
        save_checkpoint(trainer, extra={"explorer": explorer})
    assert path.read_bytes() == before
    save_checkpoint(trainer, extra={"explorer": {"w": torch.ones(2), "steps": torch.tensor([3])}})
    assert read_checkpoint(path)["iteration"] == 4


def test_save_checkpoint_refuses_an_object_a_weights_only_load_could_not_read(tmp_path):
    trainer = Saving(tmp_path / "r")
    with pytest.raises(TypeError, match=r"checkpoint state\['extra'\]\['when'\] is a"):
        save_checkpoint(trainer, extra={"when": object()})
    assert not (tmp_path / "r" / "checkpoint" / "state.pt").exists()


# --- load_checkpoint: what a process that did not write the checkpoint loads (several processes) ---------
def test_load_checkpoint_loads_the_runs_checkpoint_checked_or_reports_none(tmp_path):
    cfg = _small(tmp_path, resume=True)
    path = cfg.run_dir / "checkpoint" / "state.pt"
    writer = Trainer(cfg, policy=untrained_tiny_policy(0))
    reader = Trainer(cfg, policy=untrained_tiny_policy(1))
    assert load_checkpoint(reader) is False and reader.iteration == 0  # nothing saved yet
    writer.iteration, writer.env_steps, writer.successes = 2, 9, {"t a"}
    writer.save_checkpoint()
    assert reader.load_checkpoint() is True  # the Trainer's own method, as the loop calls it
    assert (reader.iteration, reader.env_steps, reader.successes) == (2, 9, {"t a"})
    for mine, theirs in zip(
        reader.policy.trainable_parameters(), writer.policy.trainable_parameters(), strict=True
    ):
        assert torch.equal(mine, theirs)
    writer.iteration = cfg.iterations + 1  # past the run's length: this config's limit applies
    writer.save_checkpoint()
    with pytest.raises(
        ValueError, match=rf"state.pt: the checkpoint is at iteration {cfg.iterations + 1}, past"
    ):
        load_checkpoint(reader)
    state = read_checkpoint(path)
    state["iteration"] = 2
    bad = next(iter(state["policy"]))
    state["policy"][bad] = torch.full_like(state["policy"][bad], math.nan)  # a damaged weight: the file named
    torch.save(state, path)
    with pytest.raises(ValueError, match=r"checkpoint/state.pt"):
        load_checkpoint(reader)
    del state["optimizer"]
    torch.save(state, path)
    with pytest.raises(ValueError, match=r"state.pt: the checkpoint lacks optimizer"):
        load_checkpoint(reader)
