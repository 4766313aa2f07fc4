"""Metrics: fixed names, one JSON line per iteration in ``runs/<name>/metrics.jsonl``.

Names (listed in docs/training.md): ``rollout/*`` what the rollouts did, ``reward/*`` the rewards under the
run's reward mode, ``adv/*`` the advantages, ``loss/*`` the update, ``eval/*`` greedy evaluation
(``eval/success``, ``eval/score``, and per split ``eval/<split>/success``), ``time/*`` seconds.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

from rspo.core.atomic import atomic_write_text
from rspo.core.rollout import Episode


def episode_metrics(episodes: list[Episode], prefix: str = "rollout") -> dict:
    """Success, score, progress, length and invalid-action fraction of ``episodes``."""
    n = max(len(episodes), 1)
    turns = sum(len(ep) for ep in episodes)
    return {
        f"{prefix}/success": sum(ep.won for ep in episodes) / n,
        f"{prefix}/score": 100.0 * sum(ep.score for ep in episodes) / n,
        f"{prefix}/progress": sum(ep.progress for ep in episodes) / n,
        f"{prefix}/episode_len": turns / n,
        f"{prefix}/invalid_frac": sum(not t.valid for ep in episodes for t in ep.turns) / max(turns, 1),
        f"{prefix}/process_return": sum(t.process_reward for ep in episodes for t in ep.turns) / n,
        f"{prefix}/episodes": len(episodes),
        f"{prefix}/turns": turns,
    }


class MetricsLog:
    """Append-only JSON lines; :meth:`truncate` drops rows after a checkpoint when a run resumes.

    A row is appended in one ``write`` call and flushed to disk; :meth:`truncate` rewrites the file
    atomically (:mod:`rspo.core.atomic`), so a kill at any moment loses at most the row being written.
    :meth:`read` skips a damaged line (one a kill cut) with a warning naming it, and keeps the rest.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def write(self, row: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = (json.dumps(row, sort_keys=True) + "\n").encode()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.lseek(fd, 0, os.SEEK_END)
            if size:
                os.lseek(fd, size - 1, os.SEEK_SET)
                if os.read(fd, 1) != b"\n":  # the last line was cut (by a kill): start a new one
                    data = b"\n" + data
            while data:
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        finally:
            os.close(fd)

    def read(self) -> list[dict]:
        if not self.path.exists():
            return []
        try:
            text = self.path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as e:  # the error names the file (before: only the codec's words)
            raise ValueError(f"{self.path} is not UTF-8 text (byte {e.start}): damaged") from None
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:  # e.g. a line cut by a kill
                warnings.warn(f"{self.path}: skipped damaged line {number} ({e})", stacklevel=2)
                continue
            if not isinstance(row, dict):
                warnings.warn(f"{self.path}: skipped line {number}: not a JSON object", stacklevel=2)
                continue
            rows.append(row)
        return rows

    def truncate(self, iteration: int) -> None:
        """Keep rows with ``iteration`` <= the given one (the last checkpoint); atomic."""
        rows = [r for r in self.read() if r.get("iteration", 0) <= iteration]
        atomic_write_text(self.path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
