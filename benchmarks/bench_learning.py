"""Does every method learn? Eval success before and after training, per algo x reward mode x env.

    python benchmarks/bench_learning.py [--profile cpu|smoke] [--envs household shop]
        [--algos grpo ppo gigpo] [--rewards outcome dense rspo] [--seeds 0 1 2] [--out runs/bench-learning]
        [--set key=value ...] [--ablations] [--table-only] [--markdown] [--diagnose] [--restore [DIR]]

Each run is ``rspo train`` with the profile's settings (``rspo.core.profiles.TRAIN_PROFILES``, shared with
the notebooks of ``rspo reproduce``) from the warm-started tiny
default, greedy evaluation before the first and after the last iteration. Runs go one after another
in seed-major order (every combination's seed 0 first), each in ``<out>/<env>-<algo>-<reward>-s<seed>/``:

- resumable run by run: a finished run (its last metrics row has the final iteration and an eval) is
  not repeated; a killed one resumes from its last checkpoint; so the table can be filled in parts;
- the initial evaluation is the same for every run of an environment (same policy, greedy, same
  tasks), so it is computed once and cached in ``<out>/initial-<env>.json`` (``rspo.study.experiments``);
- ``--ablations`` adds the profile's ablation runs (notebook 05's: RSPO on GRPO with one setting
  changed, seed 0), so that the benchmark fills every run ``rspo reproduce --profile cpu`` reads; for
  the lab, the protocol's ablation rows (``rspo.core.profiles.LAB_ABLATIONS``) at every seed given;
- ``--table-only`` prints the table from what is on disk; ``--diagnose`` adds what the training rows
  say (``rspo.study.analysis.diagnostics_table``: rollout success, process return, RSPO's explorer and replay);
- ``--restore`` first puts back the finished runs whose logs were published with a report
  (``results/cpu/runs/``), so a table filled in parts on different machines goes on where the
  published one stopped;
- ``--set lr=1e-3 ...`` overrides TrainConfig fields (a sweep: give each setting its own ``--out``).

The table: per (env, algo, reward) the initial and final eval success in % (mean +- std over the
seeds found), the change, whether it beats the seed spread (``final - initial > std(final)``, "-"
with one seed), environment steps, wall minutes and CPU minutes per run (CPU: the process's CPU
time, which pauses and waits for a shared core do not inflate; blank for runs of kit versions that
did not log it). Shop also shows the score (0-100).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rspo.core.config import TrainConfig  # noqa: E402
from rspo.core.envs import list_envs  # noqa: E402
from rspo.core.profiles import TRAIN_PROFILES  # noqa: E402
from rspo.study.experiments import grid_configs  # noqa: E402


def finished_runs(configs: list[TrainConfig]) -> list:
    """The finished runs among ``configs`` (:func:`rspo.study.experiments.finished_run`), each read once."""
    from rspo.study.experiments import finished_run

    return [run for run in map(finished_run, configs) if run is not None]


def run_one(cfg: TrainConfig):
    """Train (or resume) the run ``cfg`` names, with the trainer's progress bar (a run takes minutes:
    the terminal shows each iteration); the finished :class:`rspo.study.analysis.Run`."""
    from dataclasses import replace

    from rspo.study.experiments import ensure_run

    return ensure_run(replace(cfg, progress=True))  # progress may differ from a saved run's config


def table(runs: list, markdown: bool, split: str = "") -> str:
    """The table of the finished ``runs`` (aggregated over seeds by :mod:`rspo.study.analysis`); ``split``:
    success on that evaluation split only (:func:`rspo.study.analysis.summarise`)."""
    from rspo.study.analysis import aggregate, mixed_starts, results_table, summarise, to_markdown, to_text

    rows = summarise(runs, split)
    if not rows:
        return "(no finished runs yet)" if not runs else f"(no finished run evaluated on split {split!r})"
    head, lines = results_table(aggregate(rows))
    return "\n".join([to_markdown(head, lines) if markdown else to_text(head, lines), *mixed_starts(runs)])


def budget(configs: list[TrainConfig], runs: list, target_minutes: float = 15.0) -> str:
    """Time figures of the finished ``runs`` among ``configs``: how many combinations exceed
    ``target_minutes`` per run (median over their seeds) and the projected run time of all
    ``configs``, each counted at its combination's median (combinations with no finished run are
    named, not guessed). A run counts its CPU minutes (``time/cpu_*``: one thread per run, so the
    minutes it keeps a core busy, not counting pauses or waits for a shared core) where it logged
    them, else its wall minutes."""
    import statistics

    from rspo.study.analysis import method_name, summarise

    minutes: dict[tuple, list[float]] = {}
    for row in summarise(runs):  # CPU minutes where the run logged them: pauses and sharing excluded
        m = row["minutes"] if math.isnan(row["cpu_minutes"]) else row["cpu_minutes"]
        minutes.setdefault((row["env"], row["algo"], row["reward"]), []).append(m)
    median = {k: statistics.median(v) for k, v in minutes.items()}
    over = sorted(f"{'-'.join(k)} {m:.1f}" for k, m in median.items() if m > target_minutes)
    keys = [(c.env, c.algo, method_name(c)) for c in configs]  # as summarise names them (ablations apart)
    unknown = sorted({"-".join(k) for k in keys if k not in median})
    total = sum(median[k] for k in keys if k in median)
    lines = [
        f"{len(runs)} of {len(configs)} runs finished; {len(over)} of {len(median)} combinations over "
        f"{target_minutes:g} min per run (median over seeds; CPU minutes where logged, else wall): {', '.join(over) or 'none'}",
        f"projected run time of all {len(configs)} runs at the medians: {total / 60:.1f} h "
        f"({total / 120:.1f} h with two runs at a time)"
        + (f"; no finished run yet for {', '.join(unknown)}" if unknown else ""),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="cpu", choices=list(TRAIN_PROFILES))
    parser.add_argument("--envs", nargs="+", default=["household", "shop"], choices=list_envs())
    parser.add_argument("--algos", nargs="+", default=["grpo", "ppo", "gigpo"])
    parser.add_argument("--rewards", nargs="+", default=["outcome", "dense", "rspo"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--out", default=str(ROOT / "runs" / "bench-learning"))
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="TrainConfig overrides")
    parser.add_argument(
        "--ablations",
        action="store_true",
        help="also the profile's ablation runs (notebook 05: RSPO on GRPO, one setting changed), after the grid",
    )
    parser.add_argument("--table-only", action="store_true", help="print the table of finished runs")
    parser.add_argument("--markdown", action="store_true", help="the table as Markdown")
    parser.add_argument(
        "--split",
        default="",
        help="success on this evaluation split only (eval/<split>/success): e.g. valid_unseen, or pool "
        "(the training tasks of runs with --set task_pool=N)",
    )
    parser.add_argument(
        "--diagnose",
        action="store_true",
        help="also what the training rows say (rspo.study.analysis.diagnostics_table): rollout success, process "
        "return, episode length, RSPO's explorer and replay, first half -> second half of training",
    )
    parser.add_argument(
        "--restore",
        nargs="?",
        const="",
        default=None,
        metavar="DIR",
        help="first restore the run logs published with a report (default: results/<profile>/runs/) "
        "where no run of that name is; the table then reuses them",
    )
    args = parser.parse_args()
    out = Path(args.out) / args.profile
    if args.restore is not None:
        from rspo.study.reproduce import restore_published

        restore_published(args.profile, args.restore, out, lambda line: print(line, flush=True))
    overrides = {}
    for item in args.set:
        key, _, value = item.partition("=")
        kind = type(getattr(TrainConfig(), key, None))
        if kind not in (int, float, str, bool) or not value:
            parser.error(f"--set {item}: not KEY=VALUE of a TrainConfig field")
        overrides[key] = value.lower() in ("1", "true", "yes") if kind is bool else kind(value)
    configs = grid_configs(args.profile, out, args.envs, args.algos, args.rewards, args.seeds, **overrides)
    if (
        args.ablations
    ):  # as rspo reproduce --profile <profile> trains them (rspo.study.reproduce.table_parameters)
        from rspo.core.profiles import LAB_ABLATIONS
        from rspo.study.experiments import ablation_configs
        from rspo.study.reproduce import table_parameters

        if args.profile == "lab":  # no notebook reads the lab's ablations: the protocol's list, every seed
            ablations, seeds = LAB_ABLATIONS, args.seeds
        else:
            t = table_parameters(args.profile)
            ablations, seeds = t["ablations"], [s for s in args.seeds if s in t["ablation_seeds"]]
        configs += ablation_configs(args.profile, out, args.envs, ablations, seeds, **overrides)
    done = {run.config.name: run for run in finished_runs(configs)}  # each run read once
    if not args.table_only:
        todo = [c for c in configs if c.name not in done]
        print(f"{len(configs) - len(todo)} of {len(configs)} runs finished; running {len(todo)}", flush=True)
        for k, cfg in enumerate(todo, 1):
            t0 = time.perf_counter()
            print(f"[{k}/{len(todo)}] {cfg.name} ...", flush=True)
            done[cfg.name] = run_one(cfg)
            rows = done[cfg.name].rows
            print(
                f"[{k}/{len(todo)}] {cfg.name}: success {100 * rows[0]['eval/success']:.1f}% -> "
                f"{100 * rows[-1]['eval/success']:.1f}% in {time.perf_counter() - t0:.0f} s",
                flush=True,
            )
    runs = [done[c.name] for c in configs if c.name in done]  # in the grid's order
    print(table(runs, args.markdown, args.split))
    print(budget(configs, runs))
    if args.diagnose and runs:
        from rspo.study.analysis import diagnostics_table, to_markdown, to_text

        head, lines = diagnostics_table(runs)
        print(to_markdown(head, lines) if args.markdown else to_text(head, lines))


if __name__ == "__main__":
    main()
