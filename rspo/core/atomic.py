"""Writes a kill cannot half-do, and the run folder's lock.

A file a run rewrites (``config.json``, ``metrics.jsonl`` on resume, ``checkpoint/state.pt``) is
written to a temporary file in the same folder, flushed to disk (fsync) and renamed over the old one
(``os.replace``, atomic on POSIX and Windows): a process killed at any moment leaves either the old
file or the new one, never an empty or cut one. The temporary files a kill leaves behind are named
``.<name>.<random>.partial`` and removed by :func:`remove_partial_files` when the run resumes. The
new file keeps the old one's mode (a new one: 0666 less the umask, as ``open`` makes it).

:func:`atomic_dir` does the same for a whole folder (the cached tokenizer and warm starts), and
:class:`RunLock` keeps two processes from training one run folder at once (its file opened without
following a symbolic link).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

PARTIAL = ".partial"  # suffix of the temporary files
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # POSIX; Windows has no symlinks to fear here
LOCK_NAME = ".lock"


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX; a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _new_partial(path: Path) -> Path:
    """A new empty ``.<name>.<random>.partial`` beside ``path``, created with mode 0666 less the umask
    (as ``open`` creates a file; ``tempfile.mkstemp``'s 0600 turned a rewritten 0644 file into 0600)."""
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}{PARTIAL}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"could not create a temporary file beside {path}")


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path next to ``path`` to write; on leaving the block without an exception it is
    flushed to disk and renamed to ``path`` (on an exception it is removed and ``path`` is untouched)::

        with atomic_path(run_dir / "config.json") as tmp:
            cfg.save(tmp)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _new_partial(path)
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            try:  # the old file's mode (a 0644 file stays 0644 after a resume rewrote it)
                os.fchmod(f.fileno(), stat.S_IMODE(os.stat(path).st_mode))
            except (FileNotFoundError, AttributeError):  # a new file keeps 0666 less the umask
                pass
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Replace ``path``'s contents with ``data`` atomically (see the module docstring)."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    """Replace ``path``'s contents with ``text`` atomically (see the module docstring)."""
    atomic_write_bytes(path, text.encode(encoding))


@contextlib.contextmanager
def atomic_dir(final: Path) -> Iterator[Path]:
    """Yield a fresh temporary folder beside ``final``; rename it to ``final`` only if the block succeeds.

    A build that raises (or is killed) leaves no ``final``: the temporary folder is removed on an
    exception, and a killed one stays as an ignorable ``.tmp-*`` sibling. If another process finished
    ``final`` first, its copy is kept and ours is discarded.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=final.parent))
    try:
        yield tmp
        try:
            os.rename(tmp, final)
        except OSError:
            if not final.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def remove_partial_files(folder: str | Path) -> list[Path]:
    """Delete the temporary files killed writes left in ``folder`` (only under the run's lock)."""
    removed = []
    for p in Path(folder).glob(f".*{PARTIAL}"):
        p.unlink(missing_ok=True)
        removed.append(p)
    return removed


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by another user
        return True
    except OSError:
        return False
    return True


class RunLockedError(RuntimeError):
    """Another live process holds the run folder's lock."""


class RunLock:
    """An exclusive lock on a run folder: ``<run_dir>/.lock`` holding the holder's pid.

    Taken with ``fcntl.flock`` where it exists (the kernel drops it when the holder dies, however it
    dies, so a lock left by a killed run is taken over at once); elsewhere by creating the file with
    ``O_CREAT | O_EXCL`` and taking over a file whose pid is no longer running. A second process
    that asks for a held lock gets :class:`RunLockedError` naming the holder's pid, at once.
    Use as a context manager; released (and the file removed) on leaving, exception or not.
    """

    def __init__(self, run_dir: str | Path):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_NAME
        self.fd: int | None = None

    def _read_pid(self) -> int | None:
        try:  # a pid is a few bytes: read no more (the lock file could be anything), follow no link
            fd = os.open(self.path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
            try:
                text = os.read(fd, 32).decode("ascii", "replace").strip()
            finally:
                os.close(fd)
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def _open(self, flags: int) -> int:
        """The lock file opened without following a link (a ``.lock`` symlink would have the pid
        written over its target); a link or a folder there is a one-line ValueError."""
        try:
            return os.open(self.path, flags | _NOFOLLOW, 0o644)
        except OSError as e:
            if self.path.is_symlink():
                raise ValueError(
                    f"{self.path} is a symbolic link, not a lock file: refusing to follow it (it would "
                    "overwrite the file it points to); remove the link and start again"
                ) from None
            if self.path.is_dir():
                raise ValueError(
                    f"{self.path} is a folder, not a lock file; remove it and start again"
                ) from None
            if isinstance(e, FileExistsError):
                raise
            raise ValueError(f"cannot open the lock file {self.path}: {e.strerror or e}") from None

    def _held_by(self) -> str:
        pid = self._read_pid()
        return f"process {pid}" if pid is not None else "another process (pid not yet written)"

    def _refuse(self):
        raise RunLockedError(
            f"run folder {self.run_dir} is in use by {self._held_by()} (lock file {self.path}); "
            "wait for it to finish or stop it - two processes must not train one run"
        )

    def acquire(self) -> RunLock:
        if self.fd is not None:
            raise RuntimeError(f"{self.path} is already held by this RunLock")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        try:
            import fcntl
        except ImportError:  # Windows
            return self._acquire_exclusive_create()
        for _ in range(20):
            fd = self._open(os.O_RDWR | os.O_CREAT)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                self._refuse()
            # the file may have been removed (by a releasing holder) between our open and flock:
            # then we locked a file nobody else will open; try again on the current one
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self._write_pid(fd)
                return self
            os.close(fd)
        raise RunLockedError(f"could not take the lock {self.path}: it keeps being replaced")

    def _acquire_exclusive_create(self) -> RunLock:
        for _ in range(20):
            try:
                fd = self._open(os.O_RDWR | os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                pid = self._read_pid()
                if pid is None or _pid_alive(pid):
                    self._refuse()
                self.path.unlink(missing_ok=True)  # stale: its holder is gone
                continue
            self._write_pid(fd)
            return self
        raise RunLockedError(f"could not take the lock {self.path}: it keeps being replaced")

    def _write_pid(self, fd: int) -> None:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self.fd = fd

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)  # while still locked: a waiting process sees no file
        finally:
            os.close(self.fd)  # drops the flock
            self.fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
