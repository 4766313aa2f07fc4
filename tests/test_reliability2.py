"""Reliability, round 2 (issue 32, docs/reliability.md "Round 2"): one test per numbered item of the
issue - a report that runs no script, checkpoints checked for shape and identity, resume that never
drops history, bounded inputs, a lock that follows no link, a publication that removes only its own
files, and one line (naming the file or flag) for every bad input. Each runs in seconds.

A refused resume must leave every file of the run folder as it was: :func:`snapshot` (bytes and
mode of each file) before and after."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch
from test_cli_errors import small, train
from test_report import LAB, out  # noqa: F401  (the report's made-up output folder, a fixture)

import rspo.core.trainer
from rspo import cli
from rspo.core.atomic import RunLock
from rspo.core.config import TrainConfig
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.trainer import Trainer

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[1]


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder``: its bytes and mode."""
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mode)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _state(tmp_path, name: str = "r") -> Path:
    return tmp_path / name / "checkpoint" / "state.pt"


def _one_line(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text, text
    return text


def _refused(cfg: TrainConfig, match: str) -> str:
    """Resume ``cfg`` through the trainer: a one-line ValueError matching ``match``, nothing written."""
    before = snapshot(cfg.run_dir)
    with pytest.raises(ValueError, match=match) as e:
        train(cfg)
    assert snapshot(cfg.run_dir) == before
    assert not (cfg.run_dir / ".lock").exists()
    return _one_line(e.value)


def _cli_error(capsys, argv: list[str], rc: int = 2) -> str:
    """``rspo ...``: exit code ``rc``, one ``rspo: error:`` line on stderr, no traceback."""
    try:
        code = cli.main(argv)
    except SystemExit as e:  # argparse's errors
        code = e.code
    assert code == rc
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rspo: error: "), err
    return lines[0]


@pytest.fixture
def tiny_model(monkeypatch):
    """``rspo train`` builds its Trainer with the untrained tiny policy (no warm start to build)."""
    monkeypatch.setattr(rspo.core.trainer, "load_policy", lambda cfg, device=None: untrained_tiny_policy(0))


def _config_file(tmp_path, cfg: TrainConfig, **change) -> str:
    """``cfg`` as a --config file (with ``change``): `rspo train --config` resumes exactly that run."""
    path = tmp_path / f"cfg-{len(list(tmp_path.glob('cfg-*')))}.json"
    path.write_text(json.dumps({**cfg.to_dict(), **change}))
    return str(path)


# --- 1. report.html runs no script -------------------------------------------------------------------
def _plant(field: str) -> str:
    return f"<script>window.pwned='{field}'</script><img src=x onerror=\"window.pwned='{field}'\">PWN-{field}"


class _Page(HTMLParser):
    """The scripts (attributes, text) and every attribute of a page, as a browser's parser sees them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict, str]] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self._script: list | None = None

    def handle_starttag(self, tag, attrs):
        self.attrs += [(tag, k, v) for k, v in attrs]
        if tag == "script":
            self._script = [dict(attrs), ""]

    def handle_data(self, data):
        if self._script is not None:
            self._script[1] += data

    def handle_endtag(self, tag):
        if tag == "script" and self._script is not None:
            self.scripts.append(tuple(self._script))
            self._script = None


def test_1_markup_planted_in_every_string_of_a_run_never_becomes_live_markup(out):  # noqa: F811
    import plotly.graph_objects as go

    from rspo.study.report import write_report
    from rspo.study.reproduce import NotebookRun
    from rspo.study.results import save_results

    fields = ["profile", "status", "notebook", "note", "claims_head", "claims_cell", "figure", "plot_title"]
    figures = out / "figures"
    (figures / f"02_{_plant('figure').replace('/', '_')}.png").write_bytes(b"\x89PNG fake")
    go.Figure(go.Bar(x=[_plant("plot_title")], y=[1]), layout_title_text=_plant("plot_title")).write_html(
        figures / "05_planted.html", include_plotlyjs=True
    )
    save_results(figures, _plant("notebook"), note=_plant("note"), runs=[{"name": _plant("note")}])
    head = ["env", "m", "algo", _plant("claims_head")]
    save_results(
        figures,
        "05_analysis",
        claims={"head": head, "rows": [["detour", "0.1", "grpo", _plant("claims_cell")]]},
    )
    runs = [
        NotebookRun(_plant("notebook"), 3.0, out / "00_quickstart.ipynb"),
        NotebookRun("05_analysis", 3.0, out / "05_analysis.ipynb"),
    ]
    write_report(_plant("profile"), out, runs, out / "runs", [_plant("status")], 10.0, render=False)
    html = (out / "report.html").read_text()
    page = _Page()
    page.feed(html)
    for attrs, text in page.scripts:  # plotly.js in the head, and the inline figures' own scripts
        assert attrs.get("id") == "plotlyjs" or text.startswith("(function() { var f = "), text[:200]
        if attrs.get("id") != "plotlyjs":
            assert "<" not in text  # no "</script>" or "<!--" a string could hide
    assert not [a for a in page.attrs if a[1].startswith("on")], "an event handler attribute"
    assert not [a for a in page.attrs if (a[2] or "").strip().lower().startswith("javascript:")]
    assert sum(1 for attrs, _ in page.scripts if attrs.get("id") == "plotlyjs") == 1
    for field in fields:  # each planted string reached the page, as text
        assert f"PWN-{field}" in html, field


# --- 2. wrong-shape, wrong-dtype and non-finite weights ------------------------------------------------
def _edit_state(path: Path, edit) -> None:
    state = torch.load(path, weights_only=True)
    edit(state)
    torch.save(state, path)


def _first_matrix(state) -> str:
    return next(n for n, t in state["policy"].items() if t.dim() == 2)


@pytest.mark.parametrize(
    "kind, expect",
    [
        ("broadcastable", r"has shape \(1, \d+\) in the file, \(\d+, \d+\) in the model"),
        ("other shape", r"has shape \(\d+, \d+\) in the file"),
        ("dtype", "is torch.float64 in the file, torch.float32 in the model"),
        ("nan", "is not finite"),
        ("inf", "is not finite"),
        ("missing tensor", "lack the model's tensor"),
        ("extra tensor", "hold a tensor 'stowaway' the model does not have"),
        ("optimizer shape", r"optimizer state exp_avg of parameter \d+ has shape"),
        ("optimizer nan", "optimizer state exp_avg_sq of parameter 0 is not finite"),
    ],
)
def test_2_wrong_shape_dtype_or_non_finite_weights_are_one_line_and_nothing_is_written(
    tmp_path, kind, expect
):
    train(small(tmp_path, iterations=1))
    path = _state(tmp_path)

    def edit(state):
        name = _first_matrix(state)
        t = state["policy"][name]
        if kind == "broadcastable":  # copy_ broadcast it: the run went on with equal rows, exit 0
            state["policy"][name] = torch.zeros_like(t[:1])
        elif kind == "other shape":
            state["policy"][name] = torch.zeros(t.shape[0] + 1, t.shape[1])
        elif kind == "dtype":
            state["policy"][name] = t.double()
        elif kind in ("nan", "inf"):
            t[0, 0] = float(kind)
        elif kind == "missing tensor":
            del state["policy"][name]
        elif kind == "extra tensor":
            state["policy"]["stowaway"] = torch.zeros(2)
        elif kind == "optimizer shape":
            slot = next(iter(state["optimizer"]["state"].values()))
            slot["exp_avg"] = torch.zeros(slot["exp_avg"].numel() + 1)
        else:
            state["optimizer"]["state"][0]["exp_avg_sq"].view(-1)[0] = float("nan")

    _edit_state(path, edit)
    line = _refused(small(tmp_path, iterations=2, resume=True), expect)
    assert str(path) in line


def test_2_through_rspo_train_a_wrong_shape_is_one_line_exit_2(tmp_path, capsys, tiny_model):
    cfg = small(tmp_path, iterations=1)
    train(cfg)
    _edit_state(_state(tmp_path), lambda s: s["policy"].update({_first_matrix(s): torch.zeros(1, 1)}))
    before = snapshot(cfg.run_dir)
    line = _cli_error(capsys, ["train", "--config", _config_file(tmp_path, cfg, iterations=2), "--resume"])
    assert "state.pt: policy tensor" in line and "has shape (1, 1) in the file" in line
    assert snapshot(cfg.run_dir) == before


# --- 3. another run's checkpoint -----------------------------------------------------------------------
def test_3_another_runs_checkpoint_is_refused_by_its_config_and_its_run_id(tmp_path, capsys, tiny_model):
    train(small(tmp_path, name="a", iterations=1, seed=1))
    mine = small(tmp_path, name="b", iterations=2)
    train(mine)
    _state(tmp_path, "b").write_bytes(_state(tmp_path, "a").read_bytes())  # a's state in b's folder
    line = _refused(
        small(tmp_path, name="b", iterations=3, resume=True), "config differs in name: 'a' -> 'b'"
    )
    assert "another run's checkpoint?" in line and "seed: 1 -> 0" in line
    # the same config trained in another folder: only the run id tells them apart
    twin = small(tmp_path / "elsewhere", name="b", iterations=2)
    train(twin)
    _state(tmp_path, "b").write_bytes(_state(tmp_path / "elsewhere", "b").read_bytes())
    line = _refused(small(tmp_path, name="b", iterations=3, resume=True), "is another run's checkpoint")
    assert "run id" in line
    before = snapshot(mine.run_dir)  # and through rspo train: one line, exit 2, nothing written
    line = _cli_error(capsys, ["train", "--config", _config_file(tmp_path, mine, iterations=3), "--resume"])
    assert "another run's checkpoint" in line and snapshot(mine.run_dir) == before


def test_3_a_run_started_before_run_ids_still_resumes_on_its_config(tmp_path):
    train(small(tmp_path, iterations=1))
    (tmp_path / "r" / "run_id").unlink()  # as a run of an older kit: no run_id, a state without one
    _edit_state(_state(tmp_path), lambda s: s.pop("run_id"))
    resumed = train(small(tmp_path, iterations=2, resume=True))
    assert resumed.iteration == 2 and not (tmp_path / "r" / "run_id").exists()
    with pytest.raises(ValueError, match="config differs in seed"):  # its config still guards it
        train(small(tmp_path, iterations=3, resume=True, seed=5))


# --- 4. a crafted iteration -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value, expect",
    [
        (-5, "iteration -5 is not a whole number >= 1"),
        (0, "iteration 0 is not a whole number >= 1"),
        (float("nan"), "iteration nan is not a whole number"),
        (1e18, "iteration 1e[+]18 is not a whole number"),
        (10**18, "is at iteration 1000000000000000000, past iterations=3"),
        (True, "iteration True is not a whole number"),
        ("2", "iteration '2' is not a whole number"),
    ],
)
def test_4_a_crafted_iteration_never_rewrites_the_metrics(tmp_path, value, expect):
    train(small(tmp_path, iterations=2))
    _edit_state(_state(tmp_path), lambda s: s.update(iteration=value))
    line = _refused(small(tmp_path, iterations=3, resume=True), expect)
    assert str(_state(tmp_path)) in line


def test_4_an_earlier_iteration_than_the_metrics_is_refused(tmp_path):
    train(small(tmp_path, iterations=3, checkpoint_every=1))
    _edit_state(_state(tmp_path), lambda s: s.update(iteration=1))  # rows 2 and 3 would be dropped
    _refused(small(tmp_path, iterations=4, resume=True), "records iterations up to 3 but the checkpoint")


# --- 5. resume never drops history ----------------------------------------------------------------------
def test_5_a_missing_checkpoint_stops_the_resume_instead_of_deleting_the_metrics(tmp_path):
    train(small(tmp_path, iterations=2, checkpoint_every=1))
    _state(tmp_path).unlink()
    line = _refused(small(tmp_path, iterations=3, resume=True), "checkpoint .* is missing but metrics.jsonl")
    assert "put the run's checkpoint back" in line


def test_5_fewer_iterations_than_done_stops_instead_of_rewriting_config_json(tmp_path):
    train(small(tmp_path, iterations=2))
    line = _refused(small(tmp_path, iterations=1, resume=True), "past iterations=1")
    assert "--iterations 2 or more" in line


def test_5_a_missing_metrics_file_stops_the_resume(tmp_path):
    train(small(tmp_path, iterations=1))
    (tmp_path / "r" / "metrics.jsonl").unlink()
    _refused(small(tmp_path, iterations=2, resume=True), "metrics.jsonl is missing but the checkpoint")


def test_5_a_run_killed_before_its_first_checkpoint_still_starts_again(tmp_path):
    train(small(tmp_path, iterations=2, checkpoint_every=2))
    _state(tmp_path).unlink()  # metrics rows 1 and 2, no checkpoint: as a kill before the save at 2
    resumed = train(small(tmp_path, iterations=2, resume=True))
    assert resumed.iteration == 2
    assert [r["iteration"] for r in resumed.log.read()] == [1, 2]


# --- 6. the lock follows no link ------------------------------------------------------------------------
def test_6_a_lock_symlink_is_refused_and_its_target_untouched(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    run = tmp_path / "r"
    run.mkdir()
    (run / ".lock").symlink_to(victim)
    with pytest.raises(ValueError, match="is a symbolic link, not a lock file") as e:
        RunLock(run).acquire()
    _one_line(e.value)
    assert victim.read_text() == "keep me" and (run / ".lock").is_symlink()
    with pytest.raises(ValueError, match="symbolic link"):  # through a training run: nothing trained
        train(small(tmp_path, resume=True))
    assert victim.read_text() == "keep me"


# --- 7. publishing removes only what it wrote -----------------------------------------------------------
def test_7_publishing_to_x_md_keeps_an_existing_folder_x(tmp_path):
    from test_reproduce import _report

    from rspo.study.reproduce import publish_report

    report = _report(tmp_path)
    mine = tmp_path / "docs" / "results-cpu" / "thesis.tex"
    mine.parent.mkdir(parents=True)
    mine.write_text("years of work")
    publish_report(report, tmp_path / "docs" / "results-cpu.md")
    assert mine.read_text() == "years of work"
    assert (mine.parent / "curves.png").exists()
    # the run logs' folder is replaced only if it holds nothing but published logs
    logs = tmp_path / "results" / "cpu" / "runs"
    logs.mkdir(parents=True)
    (logs / "notes.md").write_text("mine")
    with pytest.raises(ValueError, match="holds notes.md, which no publication wrote"):
        publish_report(report, tmp_path / "docs" / "results-cpu.md", runs=tmp_path / "none")
    assert (logs / "notes.md").read_text() == "mine"


# --- 8. one line instead of a traceback ----------------------------------------------------------------
def test_8_a_run_name_too_long_or_with_a_newline_is_one_line_and_creates_nothing(tmp_path, capsys):
    line = _cli_error(capsys, ["train", "--name", "x" * 300, "--out-dir", str(tmp_path)])
    assert "longer than this filesystem allows" in line
    line = _cli_error(capsys, ["train", "--name", "a\nb", "--out-dir", str(tmp_path)])
    assert "holds a control character ('\\n')" in line
    for name in ("x" * 300, "a\nb"):  # the library refuses them before the lock makes the folder
        with pytest.raises(ValueError):
            Trainer(small(tmp_path, name=name), policy=untrained_tiny_policy(0)).run()
    assert list(tmp_path.iterdir()) == []


def test_8_deeply_nested_json_is_one_line(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    line = _cli_error(capsys, ["train", "--config", str(deep)])
    assert f"config file ({deep}) is JSON nested too deeply" in line
    line = _cli_error(capsys, ["train", "--env-options", "[" * 100_000, "--out-dir", str(tmp_path)])
    assert "--env-options" in line


@pytest.mark.parametrize(
    "content, expect",
    [
        ("garbage", "its config.json (.*) is not JSON"),
        ("[1, 2]", "its config.json is not a JSON object"),
        ('{"model_type": "nonsense"}', "names model_type 'nonsense', which transformers does not know"),
        (b"\xff\xfe", "is not UTF-8 text"),
    ],
)
def test_8_a_garbage_model_config_json_is_one_line(tmp_path, capsys, content, expect):
    model = tmp_path / "model"
    model.mkdir()
    write = (
        (model / "config.json").write_bytes
        if isinstance(content, bytes)
        else (model / "config.json").write_text
    )
    write(content)
    line = _cli_error(capsys, ["train", "--model", str(model), "--out-dir", str(tmp_path)])
    assert f"--model {model}" in line
    assert __import__("re").search(expect, line), line


def test_8_a_tiny_temperature_is_one_line(tmp_path, capsys):
    line = _cli_error(capsys, ["train", "--temperature", "1e-300", "--out-dir", str(tmp_path)])
    assert "temperature must be a number in [0.01, 1000], got 1e-300" in line
    cfg = tmp_path / "c.json"
    cfg.write_text('{"temperature": 1e-300}')
    assert "config file" in _cli_error(capsys, ["train", "--config", str(cfg), "--out-dir", str(tmp_path)])


@pytest.mark.parametrize(
    "plant, expect",
    [
        ("text", r"cannot read the checkpoint \(damaged, or not a file torch.save wrote\)"),
        ("random bytes", r"cannot read the checkpoint \(damaged, or not a file torch.save wrote"),
        ("folder", "is a folder, not a file"),
        ("/dev/zero", "is not a regular file"),
        ("no optimizer", "the checkpoint lacks optimizer"),
        ("no keys", "the checkpoint lacks iteration, env_steps, policy, optimizer"),
    ],
)
def test_8_a_bad_state_file_is_one_line_naming_it(tmp_path, capsys, tiny_model, plant, expect):
    cfg = small(tmp_path, iterations=1)
    train(cfg)
    path = _state(tmp_path)
    path.unlink()
    if plant == "text":
        path.write_text("hello world\n")
    elif plant == "random bytes":
        path.write_bytes(os.urandom(4096))
    elif plant == "folder":
        path.mkdir()
    elif plant == "/dev/zero":  # an endless stream: read for 21.7 GB before
        path.symlink_to("/dev/zero")
    else:
        state = (
            {"format": 2}
            if plant == "no keys"
            else {"format": 2, "iteration": 1, "env_steps": 0, "policy": {}}
        )
        torch.save(state, path)
    line = _cli_error(capsys, ["train", "--config", _config_file(tmp_path, cfg, iterations=2), "--resume"])
    assert str(path) in line and __import__("re").search(expect, line), line
    assert "pickle" not in line and "Python object" not in line  # 10: random bytes are no pickle


def test_8_a_folder_where_config_json_or_metrics_is_expected_is_one_line(tmp_path, capsys):
    cfg = small(tmp_path, iterations=1)
    train(cfg)
    for name in ("config.json", "metrics.jsonl"):
        path = tmp_path / "r" / name
        kept = path.read_bytes()
        path.unlink()
        path.mkdir()
        line = _cli_error(
            capsys, ["train", "--config", _config_file(tmp_path, cfg, iterations=2), "--resume"]
        )
        assert f"{path} is a folder, not a file" in line
        path.rmdir()
        path.write_bytes(kept)


def test_8_disk_full_is_one_line_naming_the_file(tmp_path, capsys, tiny_model, monkeypatch):
    import rspo.core.metrics

    def full(self, row):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))

    monkeypatch.setattr(rspo.core.metrics.MetricsLog, "write", full)
    line = _cli_error(capsys, ["train", "--config", _config_file(tmp_path, small(tmp_path))], rc=1)
    assert f"{tmp_path / 'r' / 'metrics.jsonl'}: No space left on device; free some space" in line


def test_8_out_a_file_and_memory_error_are_one_line(tmp_path, capsys, monkeypatch):
    line = _cli_error(capsys, ["demo", "--out", "/etc/passwd", "--limit", "1"])
    assert "--out /etc/passwd: /etc/passwd is a file, not a folder" in line

    def no_memory(args, write=print):
        raise MemoryError

    monkeypatch.setattr(cli, "train_config", no_memory)
    line = _cli_error(capsys, ["train"], rc=1)
    assert "out of memory" in line


# --- 9. bounded inputs ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, expect",
    [
        (
            ["train", "--tasks-per-iter", "1000000000"],
            "--tasks-per-iter: must be an integer in 1..4096, got 1000000000",
        ),
        (["train", "--tasks-per-iter", "1e9"], "--tasks-per-iter: must be an integer in 1..4096, got '1e9'"),
        (["train", "--max-steps", str(10**21)], "--max-steps: must be an integer in 0..10000"),
        (
            ["train", "--threads", "100000"],
            "--threads: must be an integer in 0..CORES (this machine's CPU cores)",
        ),
        (["train", "--group-size", "100000"], "--group-size: must be an integer in 1..1024"),
        (["train", "--iterations", "-1"], "--iterations: must be an integer in 1..1000000"),
        (["play", "household", "--max-steps", "1e21"], "--max-steps: must be an integer in 0..10000"),
        (["demo", "--limit", "1000000000"], "--limit: must be an integer in 0..1000000"),
        (["replay", "x", "--iterations", str(10**12)], "--iterations: must be an integer in 1..1000000"),
    ],
)
def test_9_size_like_flags_are_bounded_at_parse_time(capsys, argv, expect):
    assert expect.replace("CORES", str(cli.cores())) in _cli_error(capsys, argv)


def test_9_every_integer_field_has_a_bound_and_a_config_file_is_bounded_too(tmp_path, capsys):
    import dataclasses

    ints = {f.name for f in dataclasses.fields(TrainConfig) if str(f.type) == "int"}
    assert ints <= set(cli.INT_BOUNDS), ints - set(cli.INT_BOUNDS)
    path = tmp_path / "big.json"
    path.write_text('{"tasks_per_iter": 1000000000}')
    line = _cli_error(capsys, ["train", "--config", str(path)])
    assert f"config file {path}: tasks_per_iter must be an integer in 1..4096" in line
    line = _cli_error(capsys, ["train", "--tasks-per-iter", "4096", "--group-size", "1024"])
    assert "episodes per iteration, over 65536" in line


def test_9_play_reads_a_bounded_line_from_dev_zero(tmp_path):
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.run(
            [sys.executable, "-m", "rspo.cli", "play", "household", "--seed", "0"],
            stdin=zero,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "rspo: error: standard input: a line longer than 4096 characters; rspo play reads one action per line"
    ]


def test_9_a_config_json_on_an_endless_stream_is_not_read(tmp_path, capsys):
    cfg = small(tmp_path, iterations=1)
    train(cfg)
    (tmp_path / "r" / "config.json").unlink()
    (tmp_path / "r" / "config.json").symlink_to("/dev/zero")
    line = _cli_error(capsys, ["train", "--config", _config_file(tmp_path, cfg, iterations=2), "--resume"])
    assert "config.json is not a regular file" in line
    line = _cli_error(capsys, ["train", "--config", "/dev/zero"])
    assert "config file (/dev/zero) is not a regular file" in line


# --- 10. minor: file names, modes, atomic writes, newlines ----------------------------------------------
def test_10_a_non_utf8_file_is_named(tmp_path, capsys):
    cfg = small(tmp_path, iterations=1)
    train(cfg)
    for name in ("config.json", "metrics.jsonl"):
        path = tmp_path / "r" / name
        kept = path.read_bytes()
        path.write_bytes(b"\xff\xfe" + kept)
        line = _cli_error(
            capsys, ["train", "--config", _config_file(tmp_path, cfg, iterations=2), "--resume"]
        )
        assert f"{path} is not UTF-8 text" in line
        path.write_bytes(kept)
    from rspo.core.metrics import MetricsLog

    (tmp_path / "m.jsonl").write_bytes(b'{"iteration": 1}\n\xff\n')
    with pytest.raises(ValueError, match=r"m.jsonl is not UTF-8 text"):
        MetricsLog(tmp_path / "m.jsonl").read()


def test_10_file_modes_are_kept_across_a_resume(tmp_path):
    old = os.umask(0o022)
    try:
        train(small(tmp_path, iterations=3, checkpoint_every=2))
        run = tmp_path / "r"
        for name in ("config.json", "metrics.jsonl", "checkpoint/state.pt", "run_id"):
            assert (run / name).stat().st_mode & 0o777 == 0o644, name  # new files: 0666 less the umask
        (run / "config.json").chmod(0o640)
        # as a kill after row 3's write, before its checkpoint: the resume truncates the metrics
        _edit_state(run / "checkpoint" / "state.pt", lambda s: s.update(iteration=2))
        (run / "checkpoint" / "state.pt").chmod(0o644)
        train(small(tmp_path, iterations=3, checkpoint_every=2, resume=True))
        assert (run / "config.json").stat().st_mode & 0o777 == 0o640
        assert (run / "metrics.jsonl").stat().st_mode & 0o777 == 0o644
        assert (run / "checkpoint" / "state.pt").stat().st_mode & 0o777 == 0o644
    finally:
        os.umask(old)


def test_10_report_and_demo_outputs_are_written_atomically(tmp_path, monkeypatch, capsys):
    import rspo.core.atomic

    (tmp_path / "results.json").write_text("old")

    def killed(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(rspo.core.atomic.os, "replace", killed)  # a kill (^C) at the rename
    assert cli.main(["demo", "--limit", "1", "--out", str(tmp_path)]) == 130
    assert (tmp_path / "results.json").read_text() == "old"
    assert not list(tmp_path.glob(".*.partial"))
    from rspo.study.report import write_report

    rep = tmp_path / "rep"
    rep.mkdir()
    for name in ("report.md", "report.html"):
        (rep / name).write_text("old")
    with pytest.raises(KeyboardInterrupt):
        write_report("smoke", rep, [], rep / "none", None, 1.0, render=False)
    assert (rep / "report.md").read_text() == (rep / "report.html").read_text() == "old"
    assert not list(rep.glob(".*.partial"))
    # the initial evaluation a grid's runs share (initial-<env>.json), with the evaluation stubbed
    import rspo.core.trainer
    import rspo.study.experiments as experiments

    class Probe:
        def __init__(self, cfg, policy=None):
            pass

        def evaluate(self):
            return {"eval/success": 0.5, "time/cpu_eval": 1.0}

    monkeypatch.setattr(rspo.core.trainer, "load_policy", lambda cfg, device: object())
    monkeypatch.setattr(rspo.core.trainer, "Trainer", Probe)
    monkeypatch.setattr(experiments, "weights_fingerprint", lambda policy: "w")
    (tmp_path / "initial-detour.json").write_text("[]")
    with pytest.raises(KeyboardInterrupt):
        experiments.initial_eval(TrainConfig(env="detour", out_dir=str(tmp_path)))
    assert (tmp_path / "initial-detour.json").read_text() == "[]" and not list(tmp_path.glob(".*.partial"))


# --- 11. the docs say what happens, line by line --------------------------------------------------------
def test_11_the_docs_round_2_section_names_tests_that_exist():
    import re

    text = (ROOT / "docs" / "reliability.md").read_text()
    assert "## Round 2" in text
    section = text[text.index("## Round 2") :]
    named = set(re.findall(r"`(test_\d+_\w+)`", section))
    here = set(re.findall(r"^def (test_\d+_\w+)", Path(__file__).read_text(), re.M))
    assert named and named <= here, named - here
    assert {n.split("_")[1] for n in named} >= {str(i) for i in range(1, 11)}
