"""A run that cannot be hijacked, corrupted or silently wrong (issue 20): weights-only checkpoints,
atomic writes, the run folder's lock, non-finite updates, and a SIGKILL test (docs/reliability.md)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import pickle
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from test_trainer import small

import rspo.atomic
from rspo.atomic import RunLock, RunLockedError, atomic_write_text, remove_partial_files
from rspo.checkpoint import check_plain, read_checkpoint
from rspo.metrics import MetricsLog
from rspo.policies.tiny import untrained_tiny_policy
from rspo.rollout import Episode, Turn
from rspo.trainer import Trainer
from rspo.update import NonFiniteError

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[1]


class Plant:
    """A pickle that runs code when loaded: it writes ``marker``."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('pwned')",))


def _state_path(cfg) -> Path:
    return cfg.run_dir / "checkpoint" / "state.pt"


def _turn(action="go") -> Turn:
    return Turn("p", ["go", "look"], action, 0, [5, 6], [-0.5, -0.25], "a", 1.0, 0.0, True, None, [-0.4])


def _child(code: str) -> subprocess.Popen:
    """A Python subprocess running ``code`` that prints 'ready' when it holds what it should."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )


# --- checkpoints: weights only --------------------------------------------------------------------
def test_an_rspo_checkpoint_loads_with_weights_only_and_restores_the_buffer(tmp_path):
    from rspo.swap import ReplayBuffer

    cfg = small(tmp_path, name="r", algo="grpo", reward="rspo", iterations=1)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    trainer.run()
    state = torch.load(_state_path(cfg), weights_only=True)  # raises on any non-allowed object
    assert state["format"] == 2 and state["iteration"] == 1
    buffer = state["extra"]["buffer"]
    assert buffer and isinstance(buffer[0]["episodes"][0], dict)
    restored = ReplayBuffer.from_state(buffer, cfg.buffer_groups, cfg.buffer_max_age)
    assert [g.episodes for g in restored.groups] == [g.episodes for g in trainer.buffer.groups]
    assert isinstance(restored.groups[0].episodes[0].turns[0], Turn)
    for name, p in trainer.explorer.named_trainable_parameters():
        assert torch.equal(state["extra"]["explorer"][name], p.detach().cpu())


@pytest.mark.parametrize("how", ["pickle.dump", "torch.save inside a state dict"])
def test_a_planted_pickle_does_not_run_on_resume(tmp_path, how):
    cfg = small(tmp_path, name="shared", iterations=2)
    marker = tmp_path / "marker.txt"
    path = _state_path(cfg)
    path.parent.mkdir(parents=True)
    cfg.save(cfg.run_dir / "config.json")
    if how == "pickle.dump":
        path.write_bytes(pickle.dumps(Plant(marker)))
    else:
        torch.save({"format": 2, "iteration": 1, "policy": {}, "extra": {"x": Plant(marker)}}, path)
    resumed = small(tmp_path, name="shared", iterations=2, resume=True)
    with pytest.raises(ValueError, match=r"state\.pt: refusing to load this checkpoint") as err:
        Trainer(resumed, policy=untrained_tiny_policy(0)).run()
    assert "\n" not in str(err.value) and "builtins.exec" in str(err.value)
    assert not marker.exists()
    assert not (cfg.run_dir / ".lock").exists()  # the failed run released its lock
    # the plant is real: loading it the old way (a plain unpickler) runs its code
    if how == "pickle.dump":
        pickle.loads(path.read_bytes())
    else:
        torch.load(path, weights_only=False)
    assert marker.read_text() == "pwned"


def test_an_old_format_checkpoint_is_refused_as_old_and_unsafe(tmp_path):
    old = tmp_path / "old.pt"
    episode = Episode("household", "t0", 0, 0, [_turn()])
    torch.save({"format": 1, "extra": {"buffer": [{"iteration": 0, "episodes": [episode]}]}}, old)
    with pytest.raises(ValueError, match=r"rspo\.records\.Episode.*old \(format 1\) checkpoint.*unsafe"):
        read_checkpoint(old)
    torch.save({"format": 1, "iteration": 3, "policy": {}}, old)  # format 1 without objects
    with pytest.raises(ValueError, match="format 1 is not 2: an old format, unsafe to load"):
        read_checkpoint(old)
    torch.save({"format": 2, "iteration": 3, "policy": {"w": torch.ones(3)}}, old)
    old.write_bytes(old.read_bytes()[:100])  # cut
    with pytest.raises(ValueError, match="cannot read the checkpoint"):
        read_checkpoint(old)


def test_saving_refuses_objects_a_weights_only_load_could_not_read():
    check_plain({"a": [1, 2.5, "x", None, True, (1, 2)], "t": torch.zeros(2)})
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.ones(2))])
    optimizer.state_dict()  # plain: checked below
    check_plain(optimizer.state_dict())
    with pytest.raises(TypeError, match=r"state\['extra'\]\[0\] is a Episode"):
        check_plain({"extra": [Episode("household", "t", 0, 0)]})


# --- atomic writes and the metrics log ------------------------------------------------------------
def test_an_atomic_write_leaves_the_old_file_until_the_rename(tmp_path, monkeypatch):
    path = tmp_path / "config.json"
    path.write_text("old")
    real_replace, seen = os.replace, []

    def killed_at_rename(src, dst):
        seen.append((Path(dst).read_text(), Path(src).read_text()))
        raise KeyboardInterrupt

    monkeypatch.setattr(rspo.atomic.os, "replace", killed_at_rename)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(path, "new contents")
    assert seen == [("old", "new contents")] and path.read_text() == "old"
    assert list(tmp_path.iterdir()) == [path]  # the temporary file is removed
    monkeypatch.setattr(rspo.atomic.os, "replace", real_replace)
    atomic_write_text(path, "new contents")
    assert path.read_text() == "new contents" and list(tmp_path.iterdir()) == [path]


def test_truncating_the_metrics_never_empties_the_file(tmp_path, monkeypatch):
    log = MetricsLog(tmp_path / "metrics.jsonl")
    for i in range(4):
        log.write({"iteration": i, "x": i / 3})
    before = log.path.read_text()
    seen = []

    def killed_at_rename(src, dst):
        seen.append(Path(dst).read_text())
        raise KeyboardInterrupt

    monkeypatch.setattr(rspo.atomic.os, "replace", killed_at_rename)
    with pytest.raises(KeyboardInterrupt):
        log.truncate(1)
    assert seen == [before] and log.path.read_text() == before
    monkeypatch.undo()
    log.truncate(1)
    assert [r["iteration"] for r in log.read()] == [0, 1]


def test_a_killed_atomic_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "state.pt"
    path.write_bytes(b"old checkpoint")
    proc = _child(
        f"""
        import time
        from rspo.atomic import atomic_path
        with atomic_path({str(path)!r}) as tmp:
            tmp.write_bytes(b"half a new chec")
            print("ready", flush=True)
            time.sleep(120)
        """
    )
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert path.read_bytes() == b"old checkpoint"
    left = [p for p in tmp_path.iterdir() if p != path]
    assert len(left) == 1 and left[0].name.startswith(".state.pt.") and left[0].name.endswith(".partial")
    assert remove_partial_files(tmp_path) == left and list(tmp_path.iterdir()) == [path]


def test_reading_the_metrics_skips_a_damaged_line_and_names_it(tmp_path):
    path = tmp_path / "metrics.jsonl"
    rows = [{"iteration": i, "x": 0.5 * i} for i in range(4)]
    lines = [json.dumps(r) for r in rows]
    lines[1] = lines[1][:9] + "\x00\x00garbage"  # damaged in the middle
    path.write_text("\n".join(lines) + '\n{"iteration": 4, "x"')  # and a last line cut by a kill
    with pytest.warns(UserWarning) as caught:
        read = MetricsLog(path).read()
    assert read == [rows[0], rows[2], rows[3]]  # the rows after the damaged line are kept
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and "damaged line 2" in messages[0] and "damaged line 5" in messages[1]


def test_a_row_written_after_a_cut_line_starts_its_own_line(tmp_path):
    log = MetricsLog(tmp_path / "metrics.jsonl")
    log.write({"iteration": 1})
    with log.path.open("a") as f:
        f.write('{"iteration": 2, "x": 0.')
    log.write({"iteration": 3})
    with pytest.warns(UserWarning, match="damaged line 2"):
        assert log.read() == [{"iteration": 1}, {"iteration": 3}]


# --- the run folder's lock ------------------------------------------------------------------------
def test_a_second_process_on_the_same_run_folder_fails_at_once_and_a_dead_holders_lock_is_taken_over(
    tmp_path,
):
    cfg = small(tmp_path, name="busy", iterations=1)
    holder = _child(
        f"""
        import time
        from rspo.atomic import RunLock
        RunLock({str(cfg.run_dir)!r}).acquire()
        print("ready", flush=True)
        time.sleep(120)
        """
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(RunLockedError, match=f"in use by process {holder.pid} "):
            Trainer(cfg, policy=untrained_tiny_policy(0)).run()
        assert not (cfg.run_dir / "config.json").exists()  # refused before touching the folder
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (cfg.run_dir / ".lock").read_text().strip() == str(holder.pid)  # left by the killed holder
    rows = Trainer(cfg, policy=untrained_tiny_policy(0)).run()  # taken over
    assert [r["iteration"] for r in rows] == [1]
    assert not (cfg.run_dir / ".lock").exists()  # released at the end


def test_two_locks_in_one_process_and_the_fallback_without_flock(tmp_path):
    with RunLock(tmp_path):
        with pytest.raises(RunLockedError, match=f"in use by process {os.getpid()} "):
            RunLock(tmp_path).acquire()
    assert not (tmp_path / ".lock").exists()
    # where fcntl is missing: O_CREAT | O_EXCL, and a lock whose pid is dead is taken over
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / ".lock").write_text(f"{dead.pid}\n")
    lock = RunLock(tmp_path)._acquire_exclusive_create()
    assert (tmp_path / ".lock").read_text().strip() == str(os.getpid())
    with pytest.raises(RunLockedError, match=f"in use by process {os.getpid()} "):
        RunLock(tmp_path)._acquire_exclusive_create()  # a live pid
    lock.release()
    assert not (tmp_path / ".lock").exists()


# --- non-finite updates ---------------------------------------------------------------------------
def _poison_from(monkeypatch, iteration: int, poison) -> None:
    """Call ``poison(trainer)`` before the train step of 0-based ``iteration``."""
    original = Trainer.train_step

    def step(self, it):
        if it == iteration:
            poison(self)
        return original(self, it)

    monkeypatch.setattr(Trainer, "train_step", step)


def _assert_last_good_checkpoint(cfg, iteration: int, policy=None) -> dict:
    state = read_checkpoint(_state_path(cfg))
    assert state["iteration"] == iteration
    assert all(torch.isfinite(t).all() for t in state["policy"].values())
    if policy is not None:  # stopped before the optimizer step: the weights are the checkpoint's
        for name, p in policy.named_trainable_parameters():
            assert torch.equal(state["policy"][name], p.detach().cpu()), name
    return state


def test_a_nan_loss_stops_training_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    import rspo.update

    cfg = small(tmp_path, name="nan", iterations=3)
    poisoned = {"on": False}
    real_loss = rspo.update.ppo_clip_loss

    def loss(*args, **kwargs):
        pl, clipfrac = real_loss(*args, **kwargs)
        return (pl * math.nan if poisoned["on"] else pl), clipfrac

    monkeypatch.setattr(rspo.update, "ppo_clip_loss", loss)
    _poison_from(monkeypatch, 1, lambda trainer: poisoned.update(on=True))
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    with pytest.raises(NonFiniteError, match=r"iteration 2: the policy update's loss is not finite \(nan\)"):
        trainer.run()
    _assert_last_good_checkpoint(cfg, 1, trainer.policy)
    assert [r["iteration"] for r in MetricsLog(cfg.run_dir / "metrics.jsonl").read()] == [1]
    monkeypatch.undo()  # the cause removed, the run resumes from the last good checkpoint
    rows = Trainer(
        small(tmp_path, name="nan", iterations=3, resume=True), policy=untrained_tiny_policy(0)
    ).run()
    assert [r["iteration"] for r in rows] == [1, 2, 3]


def test_a_nan_gradient_stops_before_the_optimizer_step(tmp_path, monkeypatch):
    cfg = small(tmp_path, name="grad", iterations=3)

    def poison(trainer):
        next(iter(trainer.params)).register_hook(lambda g: g * math.nan)

    _poison_from(monkeypatch, 1, poison)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    with pytest.raises(NonFiniteError, match="iteration 2: the policy update's gradient norm is not finite"):
        trainer.run()
    _assert_last_good_checkpoint(cfg, 1, trainer.policy)


def test_nan_parameters_after_a_step_stop_the_run_and_are_never_saved(tmp_path, monkeypatch):
    cfg = small(tmp_path, name="params", iterations=3)

    def poison(trainer):
        step = trainer.optimizer.step

        def bad_step(*args, **kwargs):
            out = step(*args, **kwargs)
            with torch.no_grad():
                trainer.params[0].view(-1)[0] = math.inf
            return out

        trainer.optimizer.step = bad_step

    _poison_from(monkeypatch, 1, poison)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    with pytest.raises(NonFiniteError, match="iteration 2: the policy update's parameters are not finite"):
        trainer.run()
    assert not torch.isfinite(trainer.params[0]).all()
    _assert_last_good_checkpoint(cfg, 1)
    before = _state_path(cfg).read_bytes()
    with pytest.raises(RuntimeError, match="refusing to write a checkpoint at iteration 1: policy parameter"):
        trainer.save_checkpoint()
    assert _state_path(cfg).read_bytes() == before


def test_a_huge_learning_rate_stops_with_a_clear_error(tmp_path):
    cfg = small(tmp_path, name="lr", iterations=4, lr=1e30)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    with pytest.raises(NonFiniteError, match=r"iteration \d: the policy update's .* is not finite"):
        trainer.run()
    state = read_checkpoint(_state_path(cfg))
    assert all(torch.isfinite(t).all() for t in state["policy"].values())


def test_a_nan_reward_is_a_clear_error_before_any_update(tmp_path, monkeypatch):
    import rspo.rewards

    outcome = rspo.rewards.REWARD_MODES["outcome"]

    def nan_reward(episodes, spec):
        rewards = outcome(episodes, spec)
        rewards[0][-1] = math.nan
        return rewards

    monkeypatch.setitem(rspo.rewards.REWARD_MODES, "outcome", nan_reward)
    cfg = small(tmp_path, name="reward", iterations=2)
    with pytest.raises(ValueError, match="episode_returns is not finite: nan at row 0"):
        Trainer(cfg, policy=untrained_tiny_policy(0)).run()
    assert not _state_path(cfg).exists()


# --- SIGKILL at random moments --------------------------------------------------------------------
def _kill_test_module():
    spec = importlib.util.spec_from_file_location("kill_test", ROOT / "benchmarks" / "kill_test.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_kill_tests_comparison_finds_a_duplicated_or_missing_row_and_other_weights(tmp_path):
    kt = _kill_test_module()
    state = {"format": 2, "iteration": 2, "env_steps": 8, "policy": {"w": torch.ones(2)}}
    state |= {"optimizer": {"state": {}, "param_groups": []}, "extra": {}}
    for name, iterations in (("ref", [1, 2]), ("good", [1, 2]), ("dup", [1, 1, 2]), ("miss", [2])):
        (tmp_path / name / "checkpoint").mkdir(parents=True)
        rows = "".join(
            json.dumps({"iteration": i, "loss/grad_norm": 0.5, "time/total": 9.0 * i}) + "\n"
            for i in iterations
        )
        (tmp_path / name / "metrics.jsonl").write_text(rows)
        torch.save(state, tmp_path / name / "checkpoint" / "state.pt")
    assert kt.compare(tmp_path / "ref", tmp_path / "good") == []
    assert kt.compare(tmp_path / "ref", tmp_path / "dup") == ["reference row iteration 1 found 2 times"]
    assert kt.compare(tmp_path / "ref", tmp_path / "miss") == ["reference row iteration 1 found 0 times"]
    torch.save({**state, "policy": {"w": torch.zeros(2)}}, tmp_path / "good" / "checkpoint" / "state.pt")
    (tmp_path / "good" / "checkpoint" / ".state.pt.x.partial").write_bytes(b"")
    assert kt.compare(tmp_path / "ref", tmp_path / "good") == [
        "final checkpoint differs in policy",
        "temporary files left: ['.state.pt.x.partial']",
    ]


@pytest.mark.slow
def test_sigkill_at_random_moments_and_in_writes_then_resume_ends_as_the_uninterrupted_run(tmp_path):
    kt = _kill_test_module()
    passed, done, problems = kt.kill_test(
        tmp_path, kills=4, iterations=4, checkpoint_every=1, reward="dense", eval_every=2, seed=1
    )
    assert problems == [] and passed, problems
    assert done["kills"] >= 2 and done["starts"] == done["kills"] + 1 and done["stale_locks"] == done["kills"]
