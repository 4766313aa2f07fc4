"""rspo.core.atomic: atomic writes (a kill leaves the old file) and the run folder's lock (issue 20,
docs/reliability.md). The atomic folder of a cached build: tests/test_sft.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_trainer import small

import rspo.core.atomic
from rspo.core.atomic import RunLock, RunLockedError, atomic_write_text, remove_partial_files
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.trainer import Trainer

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[1]


def _child(code: str) -> subprocess.Popen:
    """A Python subprocess running ``code`` that prints 'ready' when it holds what it should."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )


def test_an_atomic_write_leaves_the_old_file_until_the_rename(tmp_path, monkeypatch):
    path = tmp_path / "config.json"
    path.write_text("old")
    real_replace, seen = os.replace, []

    def killed_at_rename(src, dst):
        seen.append((Path(dst).read_text(), Path(src).read_text()))
        raise KeyboardInterrupt

    monkeypatch.setattr(rspo.core.atomic.os, "replace", killed_at_rename)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(path, "new contents")
    assert seen == [("old", "new contents")] and path.read_text() == "old"
    assert list(tmp_path.iterdir()) == [path]  # the temporary file is removed
    monkeypatch.setattr(rspo.core.atomic.os, "replace", real_replace)
    atomic_write_text(path, "new contents")
    assert path.read_text() == "new contents" and list(tmp_path.iterdir()) == [path]


def test_a_killed_atomic_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "state.pt"
    path.write_bytes(b"old checkpoint")
    proc = _child(
        f"""
        import time
        from rspo.core.atomic import atomic_path
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


@pytest.mark.slow
def test_a_second_process_on_the_same_run_folder_fails_at_once_and_a_dead_holders_lock_is_taken_over(
    tmp_path,
):
    cfg = small(tmp_path, name="busy", iterations=1)
    holder = _child(
        f"""
        import time
        from rspo.core.atomic import RunLock
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
