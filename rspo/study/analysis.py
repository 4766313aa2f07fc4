"""Load training runs, summarise each, aggregate across seeds: the results table (docs/design.md §9).

A run is a folder ``runs/<name>/`` with ``config.json`` and ``metrics.jsonl`` (:mod:`rspo.core.trainer`).
:func:`load_runs` reads every run under a folder; :func:`summarise` gives one row per run (initial
and final greedy evaluation, environment steps, wall minutes); :func:`aggregate` groups rows that
differ only in the seed and reports mean, standard deviation and a 95% confidence interval;
:func:`to_markdown` prints any of these tables. Used by ``benchmarks/bench_learning.py`` and the
notebooks.

Usage::

    from rspo.study.analysis import aggregate, load_runs, summarise, to_markdown
    table = aggregate(summarise(load_runs("runs/bench-learning/cpu")))
    print(to_markdown(table))
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from rspo.core.config import TrainConfig
from rspo.core.metrics import MetricsLog

KEYS = ("env", "algo", "reward")

# two-sided 95% Student t quantiles by degrees of freedom (n - 1); normal beyond the table
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


@dataclass
class Run:
    """One training run: its config and its metrics rows (``rows[0]`` is the initial evaluation)."""

    path: Path
    config: TrainConfig
    rows: list[dict]

    @property
    def finished(self) -> bool:
        last = self.rows[-1] if self.rows else {}
        return last.get("iteration") == self.config.iterations and "eval/success" in last

    def curve(self, key: str = "eval/success") -> list[tuple[int, int, float]]:
        """``(iteration, env_steps, value)`` of every row that has ``key``."""
        return [(r["iteration"], r.get("rollout/env_steps", 0), r[key]) for r in self.rows if key in r]


def load_run(path: str | Path) -> Run:
    path = Path(path)
    config = TrainConfig.load(path / "config.json")
    return Run(path, config, MetricsLog(path / "metrics.jsonl").read())


def load_runs(root: str | Path, finished_only: bool = True) -> list[Run]:
    """Every run in the folders under ``root`` (only finished ones unless told otherwise)."""
    runs = [load_run(p.parent) for p in sorted(Path(root).glob("*/metrics.jsonl"))]
    return [r for r in runs if r.finished or not finished_only]


RUN_LOGS = ("config.json", "metrics.jsonl")  # what a finished run is read from; checkpoints aside


def archive_runs(runs_dir: str | Path, dest: str | Path) -> list[str]:
    """Copy the logs of every finished run under ``runs_dir`` (:data:`RUN_LOGS`, a few kB each; no
    checkpoints) and its cached initial evaluations (``initial-<env>.json``) into ``dest``, replacing
    what ``dest`` held: the data behind a published report, kept with it in git, from which
    :func:`restore_runs` rebuilds the runs folder on another machine. Returns the names archived."""
    import shutil

    runs_dir, dest = Path(runs_dir), Path(dest)
    runs = load_runs(runs_dir) if runs_dir.is_dir() else []
    if dest.is_dir():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for run in runs:
        (dest / run.path.name).mkdir()
        for name in RUN_LOGS:
            shutil.copy2(run.path / name, dest / run.path.name / name)
    for cached in sorted(runs_dir.glob("initial-*.json")):
        shutil.copy2(cached, dest / cached.name)
    return [run.path.name for run in runs]


def restore_runs(archive: str | Path, runs_dir: str | Path) -> list[str]:
    """Put the runs :func:`archive_runs` wrote into ``archive`` back under ``runs_dir``, each where
    ``runs_dir`` has no folder of that name (a run there, finished or not, is left alone), with its
    config's ``out_dir`` set to ``runs_dir``; likewise a missing ``initial-<env>.json``. The restored
    runs count as finished (``bench_learning`` and ``rspo reproduce`` reuse them; nothing resumes
    them: they have no checkpoint). Returns the names restored."""
    import shutil

    archive, runs_dir = Path(archive), Path(runs_dir)
    if not archive.is_dir():
        raise FileNotFoundError(f"no run archive at {archive} (written by `rspo reproduce --publish`)")
    runs_dir.mkdir(parents=True, exist_ok=True)
    restored = []
    for saved in sorted(archive.glob("*/config.json")):
        target = runs_dir / saved.parent.name
        if target.exists():
            continue
        target.mkdir()
        cfg = TrainConfig.load(saved)
        cfg.out_dir = str(runs_dir)
        cfg.save(target / "config.json")
        shutil.copy2(saved.parent / "metrics.jsonl", target / "metrics.jsonl")
        restored.append(target.name)
    for cached in sorted(archive.glob("initial-*.json")):
        if not (runs_dir / cached.name).exists():
            shutil.copy2(cached, runs_dir / cached.name)
    return restored


def mixed_starts(runs: list[Run]) -> list[str]:
    """One line per environment whose ``runs`` began from different initial evaluations (success of
    ``rows[0]``): runs trained on different machines can start from differently built warm starts,
    and then their final successes compare less well than their changes. Empty when all agree."""
    seen: dict[str, set[float]] = {}
    for run in runs:
        if run.rows and "eval/success" in run.rows[0]:
            seen.setdefault(run.config.env, set()).add(round(100 * run.rows[0]["eval/success"], 1))
    return [
        f"note: the {env} runs started from {len(values)} different initial evaluations "
        f"({', '.join(f'{v:.1f}%' for v in sorted(values))} success): warm starts built on different "
        "machines; compare their changes rather than their final successes"
        for env, values in sorted(seen.items())
        if len(values) > 1
    ]


def summarise(runs: list[Run], split: str = "") -> list[dict]:
    """One row per run: env, algo, reward, seed, initial/final success (%) and score, steps, minutes.

    ``split``: success and score on one evaluation split (``eval/<split>/*``: ``valid_unseen``, or
    ``pool``, the training tasks of a ``task_pool`` run) instead of all of them (``eval/*``); runs that
    did not evaluate on it are left out."""
    prefix = f"eval/{split}/" if split else "eval/"
    out = []
    for run in runs:
        if not run.rows or f"{prefix}success" not in run.rows[0]:
            continue
        first, last = run.rows[0], run.rows[-1]
        wall = first.get("time/eval", 0.0) + sum(r.get("time/iteration", 0.0) for r in run.rows[1:])
        # CPU seconds, where every row logged them (runs of older versions did not: nan)
        cpu_rows = [first.get("time/cpu_eval")] + [r.get("time/cpu_iteration") for r in run.rows[1:]]
        cpu = math.nan if None in cpu_rows else sum(cpu_rows)
        cfg = run.config
        row = {k: getattr(cfg, k) for k in KEYS}
        row["reward"] = method_name(cfg)
        row.update(
            seed=cfg.seed,
            initial=100 * first[f"{prefix}success"],
            final=100 * last.get(f"{prefix}success", math.nan),
            initial_score=first.get(f"{prefix}score", math.nan),
            final_score=last.get(f"{prefix}score", math.nan),
            env_steps=last.get("rollout/env_steps", 0),
            iterations=last.get("iteration", 0),
            minutes=wall / 60,
            cpu_minutes=cpu / 60,
        )
        out.append(row)
    return out


def mean_std_ci(xs: list[float]) -> tuple[float, float, float]:
    """Mean, sample standard deviation and the half-width of a 95% t confidence interval (0 for n = 1);
    nan when there is no value or one is missing (nan)."""
    n = len(xs)
    if n == 0 or any(math.isnan(x) for x in xs):
        return math.nan, math.nan, math.nan
    mean = statistics.fmean(xs)
    if n == 1:
        return mean, 0.0, 0.0
    std = statistics.stdev(xs)
    return mean, std, _T95.get(n - 1, 1.96) * std / math.sqrt(n)


def aggregate(rows: list[dict], keys: tuple[str, ...] = KEYS) -> list[dict]:
    """Rows that share ``keys`` (all but the seed) merged: mean, std and 95% CI of every measure."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    out = []
    for key, members in groups.items():
        agg = dict(zip(keys, key, strict=True))
        agg["seeds"] = len(members)
        for measure in (
            "initial",
            "final",
            "initial_score",
            "final_score",
            "env_steps",
            "minutes",
            "cpu_minutes",
        ):
            mean, std, ci = mean_std_ci([m[measure] for m in members])
            agg[measure], agg[f"{measure}_std"], agg[f"{measure}_ci"] = mean, std, ci
        agg["change"] = agg["final"] - agg["initial"]
        # improves beyond seed noise: the mean gain exceeds the spread of the final success over seeds
        agg["beats_spread"] = None if len(members) < 2 else agg["change"] > agg["final_std"]
        out.append(agg)
    return out


def _pm(row: dict, measure: str, digits: int = 1) -> str:
    if row["seeds"] < 2:
        return f"{row[measure]:.{digits}f}"
    return f"{row[measure]:.{digits}f} ± {row[f'{measure}_std']:.{digits}f}"


def results_table(agg: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Header and text rows of the learning table (what ``bench_learning.py`` prints)."""
    head = ["env", "algo", "reward", "seeds", "initial %", "final %", "change", "beats spread"]
    head += ["score (shop)", "env steps", "minutes/run", "CPU min/run"]
    lines = []
    for row in agg:
        beats = {None: "-", True: "yes", False: "no"}[row["beats_spread"]]
        score = f"{_pm(row, 'initial_score')} -> {_pm(row, 'final_score')}" if row["env"] == "shop" else ""
        lines.append(
            [
                row["env"],
                row["algo"],
                row["reward"],
                str(row["seeds"]),
                _pm(row, "initial"),
                _pm(row, "final"),
            ]
            + [f"{row['change']:+.1f}", beats, score, f"{row['env_steps']:,.0f}", f"{row['minutes']:.1f}"]
            + ["" if math.isnan(row["cpu_minutes"]) else f"{row['cpu_minutes']:.1f}"]
        )
    return head, lines


# what the training rows say about why a method moves or not (``bench_learning.py --diagnose``): the
# learner's rollouts, the process reward it collects (misalignment: farming shows here first), and
# RSPO's explorer and replay
DIAGNOSTICS = {
    "rollout/success": ("rollout success %", 100.0),
    "rollout/process_return": ("process return", 1.0),
    "rollout/episode_len": ("episode len", 1.0),
    "rollout/no_signal_frac": ("no-signal groups %", 100.0),
    "loss/turns": ("turns trained", 1.0),
    "swap/turns": ("of them replayed", 1.0),
    "explorer/success": ("explorer success %", 100.0),
    "explorer/process_return": ("explorer process return", 1.0),
    "explorer/episode_len": ("explorer episode len", 1.0),
    "buffer/age_mean": ("replay age (iters)", 1.0),
    "swap/is_ratio_mean": ("IS ratio", 1.0),
    "swap/truncated_frac": ("truncated %", 100.0),
}


def diagnostics_table(runs: list[Run], keys=DIAGNOSTICS) -> tuple[list[str], list[list[str]]]:
    """Per (env, algo, method): each of ``keys`` averaged over a run's training iterations (the first
    and last half apart, ``first -> last``), then over its seeds; blank where no run logged the key."""
    groups: dict[tuple, list[Run]] = {}
    for run in runs:
        groups.setdefault((run.config.env, run.config.algo, method_name(run.config)), []).append(run)
    head = ["env", "algo", "reward", "seeds"] + [label for label, _ in keys.values()]
    lines = []
    for key, members in groups.items():
        cells = []
        for name, (_, scale) in keys.items():
            halves = []
            for run in members:
                values = [r[name] for r in run.rows[1:] if name in r]
                if values:
                    mid = max(1, len(values) // 2)
                    halves.append((statistics.fmean(values[:mid]), statistics.fmean(values[mid:] or values)))
            if not halves:
                cells.append("")
                continue
            first, last = (scale * statistics.fmean(h[i] for h in halves) for i in (0, 1))
            cells.append(f"{first:.2f} -> {last:.2f}" if scale == 1.0 else f"{first:.1f} -> {last:.1f}")
        lines.append([*key, str(len(members)), *cells])
    return head, lines


def to_markdown(head: list[str], lines: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(out + ["| " + " | ".join(row) + " |" for row in lines])


def to_text(head: list[str], lines: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in lines)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head)] + [fmt.format(*r) for r in lines])


# Reference numbers quoted from the GiGPO paper (arXiv 2505.10978, table 1; Qwen2.5-1.5B-Instruct,
# success % / WebShop score, mean +- std over 3 seeds) - the paper's, not the kit's. The RSPO paper's
# tables are not public.
PAPER_NUMBERS = [
    {
        "source": "GiGPO paper, 1.5B",
        "method": "PPO (critic)",
        "alfworld_all": "54.4 ± 3.1",
        "webshop_score": "73.8 ± 3.0",
        "webshop_success": "51.5 ± 2.9",
    },
    {
        "source": "GiGPO paper, 1.5B",
        "method": "RLOO",
        "alfworld_all": "69.7 ± 2.5",
        "webshop_score": "73.9 ± 5.6",
        "webshop_success": "52.1 ± 6.7",
    },
    {
        "source": "GiGPO paper, 1.5B",
        "method": "GRPO",
        "alfworld_all": "72.8 ± 3.6",
        "webshop_score": "75.8 ± 3.5",
        "webshop_success": "56.8 ± 3.8",
    },
    {
        "source": "GiGPO paper, 1.5B",
        "method": "GiGPO w/ std",
        "alfworld_all": "86.7 ± 1.7",
        "webshop_score": "83.1 ± 1.6",
        "webshop_success": "65.0 ± 3.2",
    },
]


def method_name(cfg: TrainConfig) -> str:
    """``reward`` with RSPO's variant and non-default swap settings, e.g. ``rspo-mixed``, ``rspo λ=0.5``."""
    name = cfg.reward
    if cfg.reward != "rspo":
        return name
    if cfg.swap_variant != "offpolicy":
        name += f"-{cfg.swap_variant}"
    default = TrainConfig()
    if cfg.swap_budget != default.swap_budget:  # matched: learner and explorer half the tasks each
        name += f"-{cfg.swap_budget}"
    if cfg.replay_select != default.replay_select:
        name += f" replay={cfg.replay_select}"
    if cfg.swap_lambda != default.swap_lambda:
        name += f" λ={cfg.swap_lambda:g}"
    if cfg.swap_c != default.swap_c:
        name += f" c={cfg.swap_c:g}"
    return name


def paper_table(runs: list[Run]) -> tuple[list[str], list[list[str]]]:
    """The paper-style table: rows algo x reward mode, columns per evaluation split (household success
    per split; shop score and success), final greedy evaluation, mean +- std over seeds."""
    cells: dict[tuple[str, str], dict[str, list[float]]] = {}
    columns: list[str] = []
    for run in runs:
        last = run.rows[-1]
        row = cells.setdefault((run.config.algo, method_name(run.config)), {})
        for key, value in last.items():
            parts = key.split("/")
            if len(parts) != 3 or parts[0] != "eval" or parts[2] not in ("success", "score"):
                continue
            if parts[2] == "score" and run.config.env != "shop":
                continue  # only the shop's score (WebShop's 0-100) is more than its success
            col = f"{run.config.env} {parts[1]} {parts[2]}"
            if col not in columns:
                columns.append(col)
            row.setdefault(col, []).append(value * (100 if parts[2] == "success" else 1))
    columns.sort()
    lines = []
    for (algo, method), row in sorted(cells.items()):
        out = [algo, method]
        for col in columns:
            xs = row.get(col, [])
            if not xs:
                out.append("")
                continue
            mean, std, _ = mean_std_ci(xs)
            out.append(f"{mean:.1f}" + (f" ± {std:.1f}" if len(xs) > 1 else ""))
        lines.append(out)
    return ["algo", "reward"] + columns, lines


def steps_to_level(run: Run, level: float, key: str = "rollout/success", window: int = 3) -> int | None:
    """Environment steps until the moving average (over ``window`` iterations) of ``key`` first reaches
    ``level``; None if it never does (sample efficiency)."""
    rows = [r for r in run.rows[1:] if key in r]
    for i in range(len(rows)):
        recent = rows[max(0, i - window + 1) : i + 1]
        if sum(r[key] for r in recent) / len(recent) >= level:
            return rows[i]["rollout/env_steps"]
    return None
