"""RSPO's premises on the credit-assignment lab, from finished runs: P1, P2, P3 with 95% CIs.

    python benchmarks/lab_premises.py [--runs runs/lab-sweep] [--boot 2000] [--claims [DIR ...]]
        [--claims-out FILE] [--curves [--curves-algo ALGO]] [--cost] [--collapses] [--ablations]

``--claims`` also prints the claims table of ``docs/lab/protocol.md`` (:mod:`rspo.study.claims` applies its
rules), over the lab's runs and any folders of finished runs named after it (household and shop:
``results/cpu/runs``), and writes it as data to ``--claims-out`` (default: ``claims.json`` beside the
``--runs`` folder; ``-``: none): ``head`` and ``rows`` (strings, as printed), the folders read and the
command. ``--runs results/lab/study1/runs --claims results/cpu/runs`` writes
``results/lab/study1/claims.json``, the committed table that ``rspo.study.report`` shows beside a report's
own. The premises are read at the protocol's 30 iterations: baselines continued to 60 for the claims'
equal-steps view are cut there.

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
  interval's upper end is at most 0.5; no: its lower end is above 0.5; within noise otherwise. An outcome learner that never succeeds makes P1 empty: it is reported as such.
- **P2, dense misleads (each m).** The dense learner's process return rises (last 3 iterations
  against the first: the interval above 0), and its final greedy test success (``eval/success``)
  is below the outcome learner's (the interval of dense - outcome below 0). Holds at an m when both
  do; no when either interval lies wholly on the other side; within noise otherwise.

Every label is one of holds / within noise / no: an interval that straddles its threshold is
*within noise*, wherever its estimate lies (``rspo.study.claims.verdict``).
- **P3, unsampled successes (each m).** Distinct successful trajectories
  (``rollout/distinct_successes``) of the dense learner minus the outcome learner's, at half of
  ``T``: holds when the interval is above 0. The same is printed at ``T``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rspo.study.analysis import load_runs, to_markdown  # noqa: E402
from rspo.study.claims import (  # noqa: E402
    ablation_table,
    bootstrap,
    by_reward,
    claims_table,
    curve,
    cut,
    final,
    fmt,
    interp,
    lab_runs,
    p1_ratio,
    total_steps,
    verdict,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=str(ROOT / "runs" / "lab-sweep"))
    parser.add_argument("--boot", type=int, default=2000)
    parser.add_argument(
        "--claims",
        nargs="*",
        metavar="DIR",
        help="also the protocol's claims table (rspo.study.claims), over --runs and these folders of finished "
        "runs (e.g. results/cpu/runs for household and shop)",
    )
    parser.add_argument(
        "--claims-out",
        default=None,
        metavar="FILE",
        help="where --claims writes its table as JSON (default: claims.json beside the --runs folder; - for none)",
    )
    parser.add_argument(
        "--curves", action="store_true", help="the mean greedy test success at each evaluation"
    )
    parser.add_argument(
        "--curves-algo", default="grpo", help="the base algorithm of --curves (grpo, ppo or gigpo)"
    )
    parser.add_argument("--cost", action="store_true", help="CPU seconds per run, from the runs' own rows")
    parser.add_argument(
        "--collapses",
        action="store_true",
        help="runs whose rollout success fell from >= 50%% to <= 5%% and ended there",
    )
    parser.add_argument(
        "--ablations",
        action="store_true",
        help="the protocol's ablation rows: each RSPO variant against outcome, dense and RSPO's default",
    )
    args = parser.parse_args()
    root = Path(args.runs)
    runs = [r for r in lab_runs(root) if r.config.env == "detour"]
    if args.curves:
        print(to_markdown(*curves_table(runs, args.curves_algo)) + "\n")
    if args.cost:
        print(to_markdown(*cost_table(runs)) + "\n")
    if args.collapses:
        print(to_markdown(*collapse_table(runs)) + "\n")
    if args.ablations:
        head, lines = ablation_table(runs, args.boot)
        print(to_markdown(head, lines) if lines else "(no finished ablation runs)", end="\n\n")
    if args.claims is not None:
        extra = [r for folder in args.claims for r in load_runs(folder)]
        head, lines = claims_table(runs + extra, args.boot)
        print(
            "claims (docs/lab/protocol.md, rspo.study.claims): final greedy test success, points, 95% intervals\n"
        )
        print(to_markdown(head, lines) if lines else "(no environment has outcome, dense and RSPO runs)")
        print()
        out = Path(args.claims_out) if args.claims_out else root.parent / "claims.json"
        if lines and args.claims_out != "-":
            command = " ".join(["python", "benchmarks/lab_premises.py", *sys.argv[1:]])
            table = {"command": command, "runs": [args.runs, *args.claims], "boot": args.boot}
            out.write_text(json.dumps({**table, "head": head, "rows": lines}, indent=1) + "\n")
            print(f"claims table written to {out}\n")
    groups = by_reward(runs)
    outcome = groups.get(("detour", "grpo", 0.0), {}).get("outcome", [])
    if not outcome:
        raise SystemExit(f"no finished outcome runs in {root}/m0")
    print(f"outcome learner: {len(outcome)} seeds ({root}/m0); bootstrap {args.boot}x; 95% intervals")

    for (_, algo, m), got in sorted(groups.items(), key=lambda kv: kv[0][2]):
        dense = got.get("dense", [])
        if algo != "grpo" or not dense:
            continue
        # the premises at the protocol's 30 iterations (baselines continued to 60 for the claims are cut)
        dense = [cut(r, 30) for r in dense]
        outcome_30 = [cut(r, 30) for r in outcome]
        print(f"\nm = {m:g}: dense learner {len(dense)} seeds")
        if m == 0.0 and statistics.fmean(final(r, "rollout/success") for r in outcome_30) == 0:
            print("  P1 empty: the outcome learner never succeeded")
        elif m == 0.0:
            e = bootstrap(p1_ratio, [outcome_30, dense], args.boot)
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
        e_gap = bootstrap(gap, [outcome_30, dense], args.boot)
        parts = (
            verdict(e_rise[1], e_rise[2], e_rise[0], above=0.0),
            verdict(e_gap[1], e_gap[2], e_gap[0], below=0.0),
        )
        p2 = "holds" if parts == ("holds", "holds") else ("no" if "no" in parts else "within noise")
        print(
            f"  P2 dense process-return rise: {fmt(e_rise)} ({parts[0]}); final test success dense - outcome: "
            f"{fmt(e_gap)} ({parts[1]}) -> {p2}"
        )
        t = total_steps(outcome_30)
        for frac in (0.5, 1.0):

            def distinct(o, d, at=frac * t):
                return statistics.fmean(
                    interp(*curve(r, "rollout/distinct_successes"), at) for r in d
                ) - statistics.fmean(interp(*curve(r, "rollout/distinct_successes"), at) for r in o)

            e = bootstrap(distinct, [outcome_30, dense], args.boot)
            print(
                f"  P3 distinct successes dense - outcome at {frac:g} x outcome's steps ({frac * t:,.0f}): "
                f"{fmt(e, 1)} -> {verdict(e[1], e[2], e[0], above=0.0)}"
            )


def curves_table(runs, algo: str = "grpo") -> tuple[list[str], list[list[str]]]:
    """Per m and reward mode: the mean greedy test success (%) and environment steps (thousands) at
    each evaluation, over seeds (outcome's m = 0 runs stand for every m)."""
    groups = by_reward(runs)
    its = sorted(
        {
            r["iteration"]
            for g in groups.values()
            for rs in g.values()
            for run in rs
            for r in run.rows
            if "eval/success" in r and r["iteration"] > 0
        }
    )
    lines = []
    for (_, a, m), got in sorted(groups.items(), key=lambda kv: kv[0][2]):
        if a != algo:
            continue
        for reward in ("outcome", "dense", "rspo"):
            rs = got.get(reward) or (
                groups.get(("detour", a, 0.0), {}).get(reward, []) if reward == "outcome" else []
            )
            if not rs:
                continue
            cells = []
            for it in its:
                pts = [
                    (r["eval/success"], r["rollout/env_steps"])
                    for run in rs
                    for r in run.rows
                    if r.get("iteration") == it and "eval/success" in r
                ]
                cells.append(
                    f"{100 * statistics.fmean(v for v, _ in pts):.0f}% @ {statistics.fmean(x for _, x in pts) / 1000:.1f}k"
                    if len(pts) == len(rs)
                    else ""
                )
            lines.append([f"{m:g}", reward, str(len(rs)), *cells])
    return ["m", "reward", "seeds", *[f"it {it}" for it in its]], lines


def cost_table(runs) -> tuple[list[str], list[list[str]]]:
    """CPU seconds per run (the initial evaluation and every iteration's ``time/cpu_*``) up to RSPO's
    30 iterations and, for continued baselines, to their end: mean and max over seeds."""
    groups = by_reward(runs)
    lines = []
    for (_, algo, m), got in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][2])):
        for reward, rs in sorted(got.items()):
            at30 = [_cpu(cut(r, 30)) for r in rs]
            full = [_cpu(r) for r in rs]
            lines.append(
                [
                    algo,
                    f"{m:g}",
                    reward,
                    str(len(rs)),
                    f"{statistics.fmean(at30):.0f}",
                    f"{max(at30):.0f}",
                    str(max(r.rows[-1]["iteration"] for r in rs)),
                    f"{statistics.fmean(full):.0f}",
                ]
            )
    return [
        "algo",
        "m",
        "reward",
        "seeds",
        "CPU s to it 30 (mean)",
        "max",
        "last it",
        "CPU s to the end (mean)",
    ], lines


def collapse_table(runs, high: float = 0.5, low: float = 0.05) -> tuple[list[str], list[list[str]]]:
    """Per base algorithm, m and reward: the runs whose rollout success (every iteration's sampled
    episodes) reached ``high``, then fell to ``low`` or below and ended there (the mean of the last 5
    iterations at most ``low``), with each such seed's peak and the first iteration at or below ``low``
    after it."""
    lines = []
    for (_, algo, m), got in sorted(by_reward(runs).items(), key=lambda kv: (kv[0][1], kv[0][2])):
        for reward, rs in sorted(got.items()):
            found = []
            for run in rs:
                its = [(r["iteration"], r["rollout/success"]) for r in run.rows if "rollout/success" in r]
                peak_at, peak = max(its, key=lambda e: e[1])
                after = [(it, v) for it, v in its if it > peak_at and v <= low]
                end = statistics.fmean(v for _, v in its[-5:])
                if peak >= high and after and end <= low:
                    found.append(
                        f"s{run.config.seed}: {100 * peak:.0f}% (it {peak_at}) -> "
                        f"{100 * after[0][1]:.0f}% (it {after[0][0]}), of {len(its)} iterations"
                    )
            lines.append([algo, f"{m:g}", reward, f"{len(found)} of {len(rs)}", "; ".join(found)])
    return ["algo", "m", "reward", "fell and stayed", "seed: peak -> first iteration at <= 5%"], lines


def _cpu(run) -> float:
    first = run.rows[0].get("time/cpu_eval", 0.0)
    return first + sum(r.get("time/cpu_iteration", 0.0) for r in run.rows[1:])


if __name__ == "__main__":
    main()
