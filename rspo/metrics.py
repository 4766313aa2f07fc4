"""Metrics: fixed names, one JSON line per iteration in ``runs/<name>/metrics.jsonl``.

Names (listed in the README): ``rollout/*`` what the rollouts did, ``reward/*`` the rewards under the
run's reward mode, ``adv/*`` the advantages, ``loss/*`` the update, ``eval/*`` greedy evaluation
(``eval/success``, ``eval/score``, and per split ``eval/<split>/success``), ``time/*`` seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

from rspo.rollout import Episode


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
    """Append-only JSON lines; :meth:`truncate` drops rows after a checkpoint when a run resumes."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def write(self, row: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")

    def read(self) -> list[dict]:
        if not self.path.exists():
            return []
        rows = []
        for line in self.path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by a kill
                break
        return rows

    def truncate(self, iteration: int) -> None:
        """Keep rows with ``iteration`` <= the given one (the last checkpoint)."""
        rows = [r for r in self.read() if r.get("iteration", 0) <= iteration]
        self.path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
