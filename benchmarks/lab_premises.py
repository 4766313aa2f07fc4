"""RSPO's premises on the credit-assignment lab, from finished runs: P1, P2, P3 with 95% CIs.

    python benchmarks/lab_premises.py [--runs runs/lab-sweep] [--boot 2000] [--claims]

``--claims`` also prints the claims table of ``docs/lab/protocol.md`` (its rules, read there).

Reads ``<runs>/m<m>/lab/detour-grpo-<reward>-s<seed>/`` (``benchmarks/bench_learning.py --profile lab
--envs detour --algos grpo --set misalignment=<m> --out <runs>/m<m>``): the outcome learner from
``m0`` (its training does not depend on m) and the dense learner from every ``m<m>`` folder. Each
quantity is a mean over seeds with a 95% bootstrap interval (seeds resampled with replacement within
each method, ``--boot`` times, percentiles 2.5 and 97.5). Curves are read against environment steps
(``rollout/env_steps``), each run's curve interpolated linearly at common step counts.

- **P1, sparse is slow (m = 0).** ``s*`` = 0.9 x the outcome learner's final success (the mean
  rollout success of its last 3 iterations, averaged over seeds). The ratio: the environment steps at
  which the dense learner's mean rollout-success curve first reaches ``s*``, over those at which the
  outcome learner's does (not over the whole budget, which a longer run would inflate). Holds: the
  interval's upper end is at most 0.5; within noise: the estimate is at most 0.5 but the interval is
  not; no otherwise. An outcome learner that never succeeds makes P1 empty: it is reported as such.
- **P2, dense misleads (each m).** The dense learner's process return rises (last 3 iterations
  against the first: the interval above 0), and its final greedy test success (``eval/success``)
  is below the outcome learner's (the interval of dense - outcome below 0). Holds at an m when both
  do; the claim "at m = 0 it does not" holds when the m = 0 interval of dense - outcome is not below 0.
- **P3, unsampled successes (each m).** Distinct successful trajectories
  (``rollout/distinct_successes``) of the dense learner minus the outcome learner's, at half of
  ``T``: holds when the interval is above 0. The same is printed at ``T``.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rspo.analysis import load_runs  # noqa: E402


def interp(xs: list[float], ys: list[float], x: float) -> float:
    """``ys`` at ``x`` on the piecewise-linear curve through (xs, ys); constant beyond the ends."""
    if x <= xs[0]:
        return ys[0]
    for x0, y0, x1, y1 in zip(xs, ys, xs[1:], ys[1:], strict=False):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x1 > x0 else y1
    return ys[-1]


def curve(run, key: str) -> tuple[list[float], list[float]]:
    """(environment steps, ``key``) over a run's training rows (steps start at 0 with the first value)."""
    rows = [r for r in run.rows if key in r and "rollout/env_steps" in r]
    return [0.0] + [r["rollout/env_steps"] for r in rows], [rows[0][key]] + [r[key] for r in rows]


def final(run, key: str, last: int = 3) -> float:
    values = [r[key] for r in run.rows if key in r]
    return statistics.fmean(values[-last:])


def first_reach(runs, key: str, target: float, grid: list[float]) -> float:
    """First step on ``grid`` where the mean over ``runs`` of ``key`` reaches ``target`` (inf: never)."""
    curves = [curve(r, key) for r in runs]
    for x in grid:
        if statistics.fmean(interp(xs, ys, x) for xs, ys in curves) >= target:
            return x
    return float("inf")


def bootstrap(stat, groups: list[list], boot: int, seed: int = 0) -> tuple[float, float, float]:
    """(estimate, low, high): ``stat(*groups)`` and its 95% percentile interval, each group of seeds
    resampled with replacement on its own."""
    rng = random.Random(seed)
    est = stat(*groups)
    values = sorted(stat(*[[rng.choice(g) for _ in g] for g in groups]) for _ in range(boot))
    return est, values[int(0.025 * boot)], values[min(boot - 1, int(0.975 * boot))]


def verdict(
    low: float, high: float, est: float, *, above: float | None = None, below: float | None = None
) -> str:
    if above is not None:
        return "holds" if low > above else ("within noise" if est > above else "no")
    return "holds" if high < below else ("within noise" if est < below else "no")


def fmt(e: tuple[float, float, float], digits: int = 2) -> str:
    return f"{e[0]:.{digits}f} [{e[1]:.{digits}f}, {e[2]:.{digits}f}]"


def eval_at(run, steps: float | None = None, iteration: int | None = None) -> float:
    """Greedy test success at ``iteration``, or at the evaluation whose environment steps are closest
    to ``steps`` (the protocol's equal-steps reading)."""
    rows = [r for r in run.rows if "eval/success" in r and r["iteration"] > 0]
    if iteration is not None:
        return next(r["eval/success"] for r in rows if r["iteration"] == iteration)
    return min(rows, key=lambda r: abs(r["rollout/env_steps"] - steps))["eval/success"]


def claims(by_m: dict, boot: int) -> None:
    """The protocol's claims table: (b) dense - outcome and (c) RSPO - outcome, RSPO - dense, at equal
    environment steps (primary) and equal iterations (30), per base algorithm and m."""

    def diff(pick_a, pick_b):
        return lambda a, b: statistics.fmean(map(pick_a, a)) - statistics.fmean(map(pick_b, b))

    print("\nclaims (docs/lab/protocol.md): differences of final greedy test success, 95% intervals")
    for m in sorted(by_m):
        for algo in sorted({r.config.algo for runs in by_m[m].values() for r in runs}):
            got = {k: [r for r in v if r.config.algo == algo] for k, v in by_m[m].items()}
            outcome = [r for r in by_m.get(0.0, {}).get("outcome", []) if r.config.algo == algo]
            rspo, dense = got.get("rspo", []), got.get("dense", [])
            if not (rspo and dense and outcome):
                print(
                    f"  {algo} m = {m:g}: missing runs (rspo {len(rspo)}, dense {len(dense)}, outcome {len(outcome)})"
                )
                continue
            steps = statistics.fmean(r.rows[-1]["rollout/env_steps"] for r in rspo)
            reach = min(r.rows[-1]["rollout/env_steps"] for r in dense + outcome)
            note = "" if reach >= 0.9 * steps else f" (baselines end at {reach:,.0f} steps: not extended)"
            print(
                f"  {algo} m = {m:g}: seeds rspo {len(rspo)}, dense {len(dense)}, outcome {len(outcome)}; "
                f"RSPO's steps {steps:,.0f}{note}"
            )
            for view, base_pick in (
                ("equal steps", lambda r, s=steps: eval_at(r, steps=s)),
                ("equal iterations", lambda r: eval_at(r, iteration=30)),
            ):
                rspo_pick = lambda r: eval_at(r, iteration=30)  # noqa: E731
                b = bootstrap(diff(base_pick, base_pick), [dense, outcome], boot)
                c1 = bootstrap(diff(rspo_pick, base_pick), [rspo, outcome], boot)
                c2 = bootstrap(diff(rspo_pick, base_pick), [rspo, dense], boot)
                vb = "yes" if b[2] < 0 else ("no" if b[1] > 0 else "within noise")
                vc = (
                    "yes" if c1[1] > 0 and c2[1] > 0 else ("no" if c1[2] < 0 or c2[2] < 0 else "within noise")
                )
                print(
                    f"    {view}: (b) dense - outcome {fmt(b)} -> {vb}; (c) RSPO - outcome {fmt(c1)}, "
                    f"RSPO - dense {fmt(c2)} -> {vc}"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=str(ROOT / "runs" / "lab-sweep"))
    parser.add_argument("--boot", type=int, default=2000)
    parser.add_argument("--claims", action="store_true", help="also the protocol's claims table")
    args = parser.parse_args()
    root = Path(args.runs)
    by_m: dict[float, dict[str, list]] = {}
    for folder in sorted(root.glob("m*")):
        m = float(folder.name[1:])
        for run in load_runs(folder / "lab" if (folder / "lab").is_dir() else folder):
            if run.finished and run.config.env == "detour":
                by_m.setdefault(m, {}).setdefault(run.config.reward, []).append(run)
    if args.claims:
        claims(by_m, args.boot)
    by_m = {m: {k: [r for r in v if r.config.algo == "grpo"] for k, v in g.items()} for m, g in by_m.items()}
    outcome = by_m.get(0.0, {}).get("outcome", [])
    if not outcome:
        raise SystemExit(f"no finished outcome runs in {root}/m0")
    print(f"outcome learner: {len(outcome)} seeds ({root}/m0); bootstrap {args.boot}x; 95% intervals")

    def total_steps(runs):
        return statistics.fmean(r.rows[-1]["rollout/env_steps"] for r in runs)

    def p1(out_runs, dense_runs):
        target = 0.9 * statistics.fmean(final(r, "rollout/success") for r in out_runs)
        t = total_steps(out_runs)
        grid = [t * k / 400 for k in range(1, 801)]
        t_out = first_reach(out_runs, "rollout/success", target, grid)
        return first_reach(dense_runs, "rollout/success", target, grid) / t_out if target > 0 else math.nan

    for m in sorted(by_m):
        dense = by_m[m].get("dense", [])
        if not dense:
            continue
        print(f"\nm = {m:g}: dense learner {len(dense)} seeds")
        if m == 0.0 and statistics.fmean(final(r, "rollout/success") for r in outcome) == 0:
            print("  P1 empty: the outcome learner never succeeded")
        elif m == 0.0:
            e = bootstrap(p1, [outcome, dense], args.boot)
            print(
                f"  P1 steps for dense to reach outcome's final success / outcome's steps: {fmt(e)} "
                f"-> {verdict(e[1], e[2], e[0], below=0.5001)}"
            )

        def rise(d):
            return statistics.fmean(
                final(r, "rollout/process_return") - curve(r, "rollout/process_return")[1][1] for r in d
            )

        def gap(o, d):
            return statistics.fmean(final(r, "eval/success", 1) for r in d) - statistics.fmean(
                final(r, "eval/success", 1) for r in o
            )

        e_rise = bootstrap(rise, [dense], args.boot)
        e_gap = bootstrap(gap, [outcome, dense], args.boot)
        p2 = e_rise[1] > 0 and e_gap[2] < 0
        print(
            f"  P2 dense process-return rise: {fmt(e_rise)}; final test success dense - outcome: {fmt(e_gap)} "
            f"-> {'holds' if p2 else ('dense not below outcome' if e_gap[2] >= 0 else 'no rise')}"
        )
        t = total_steps(outcome)
        for frac in (0.5, 1.0):

            def distinct(o, d, at=frac * t):
                return statistics.fmean(
                    interp(*curve(r, "rollout/distinct_successes"), at) for r in d
                ) - statistics.fmean(interp(*curve(r, "rollout/distinct_successes"), at) for r in o)

            e = bootstrap(distinct, [outcome, dense], args.boot)
            print(
                f"  P3 distinct successes dense - outcome at {frac:g} x outcome's steps ({frac * t:,.0f}): "
                f"{fmt(e, 1)} -> {verdict(e[1], e[2], e[0], above=0.0)}"
            )


if __name__ == "__main__":
    main()
