"""Each notebook's key numbers, machine-readable: ``results.json`` beside the figures.

A numbered notebook ends with one line::

    save_results(figures_dir, "03_sparse_vs_dense_baselines", runs=run_numbers(runs), table=table)

``rspo reproduce`` gives every notebook ``figures_dir = <out>/figures``; the numbers go to
``<out>/results.json``, one entry per notebook (a notebook run again replaces its own entry only).
:mod:`rspo.study.report` and the tests read them back with :func:`load_results`. A notebook opened by hand
(``figures_dir`` empty) writes nothing.

Success is in percent throughout, as in the tables; a value that is not a number (NaN, infinity) is
written as ``null``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

RESULTS_NAME = "results.json"


def results_path(figures_dir: str | Path) -> Path:
    """Where the numbers of a notebook that saves its figures in ``figures_dir`` go."""
    return Path(figures_dir).parent / RESULTS_NAME


def jsonable(value):
    """``value`` with tuples as lists, numpy and torch scalars as numbers, NaN and infinity as None,
    paths and other objects as strings (a dict's keys as strings)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        try:
            return jsonable(value.item())
        except (ValueError, RuntimeError):  # an array of more than one element
            return jsonable(value.tolist())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return str(value)


def save_results(figures_dir: str | Path, notebook: str, **numbers) -> Path | None:
    """Put ``numbers`` under ``notebook`` in the ``results.json`` beside ``figures_dir`` (replacing that
    notebook's earlier entry, keeping the others'); nothing when ``figures_dir`` is empty. Returns the
    file written, or None."""
    if not figures_dir:
        return None
    from rspo.core.atomic import atomic_write_text

    path = results_path(figures_dir)
    results = load_results(path.parent)
    results[notebook] = jsonable(numbers)
    atomic_write_text(path, json.dumps(results, indent=1, sort_keys=True) + "\n")
    print(f"key numbers of {notebook} saved to {path}")
    return path


def load_results(out: str | Path) -> dict:
    """``{notebook: numbers}`` from ``<out>/results.json`` (empty when there is none)."""
    path = Path(out) / RESULTS_NAME
    return json.loads(path.read_text()) if path.is_file() else {}


def run_numbers(runs) -> list[dict]:
    """One entry per run (:class:`rspo.study.analysis.Run`): its name, env, algo, reward mode, m, seed,
    iterations done, greedy test success (%) first and last, and environment steps at the end."""
    out = []
    for run in runs:
        cfg, rows = run.config, run.rows
        evals = [r for r in rows if "eval/success" in r]
        out.append(
            {
                "name": cfg.name,
                "env": cfg.env,
                "algo": cfg.algo,
                "reward": cfg.reward,
                "misalignment": getattr(cfg, "misalignment", None),
                "seed": cfg.seed,
                "iterations": rows[-1].get("iteration", 0) if rows else 0,
                "finished": run.finished,
                "eval_success_initial": 100 * evals[0]["eval/success"] if evals else None,
                "eval_success_final": 100 * evals[-1]["eval/success"] if evals else None,
                "env_steps": rows[-1].get("rollout/env_steps") if rows else None,
            }
        )
    return out


def table(head: list[str], rows: list[list[str]]) -> dict:
    """A printed table (``head``, ``rows`` of :func:`rspo.study.analysis.to_markdown`) as a JSON object."""
    return {"head": list(head), "rows": [list(r) for r in rows]}
