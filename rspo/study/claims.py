"""The paper's three claims, decided from finished runs by the lab protocol's rules.

``docs/lab/protocol.md`` fixes the rules before any RSPO run; this module applies them, so that
``benchmarks/lab_premises.py``, the README's table and notebook 05 print the same verdicts:

- **(a) outcome is slow** (premise P1, over the baselines' first rows up to RSPO's last iteration:
  the lab's 30): the environment steps at which the dense learner's mean
  rollout-success curve first reaches 0.9 x the outcome learner's final rollout success, over those
  at which the outcome learner's does. yes: the 95% interval's upper end <= 0.5; within noise: only
  the estimate <= 0.5; no: otherwise; n/a when the outcome learner never succeeds.
- **(b) dense is biased**: dense - outcome final greedy test success (``eval/success``) at equal
  environment steps. yes: the interval lies below 0; no: above 0; within noise otherwise.
- **(c) RSPO >= both**: RSPO - outcome and RSPO - dense at equal environment steps. yes: both
  intervals above 0; no: either below 0; within noise otherwise.

Equal environment steps: RSPO's last row against each baseline's evaluation row whose
``rollout/env_steps`` is closest to RSPO's mean final steps. Equal iterations: every method's row at
RSPO's last iteration. A difference is a difference of means over seeds; its interval is a bootstrap
(each method's seeds resampled on their own, percentiles 2.5 and 97.5). Curves are read against
environment steps, each run's interpolated linearly.
"""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path

from rspo.core.registry import ESTIMATORS
from rspo.study.analysis import load_runs

# the algorithms whose advantages are relative within a task's group: every estimator without a critic
GROUP_RELATIVE = tuple(e.algorithm for e in ESTIMATORS.values() if not e.critic)


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
    """The mean of ``key`` over the run's last ``last`` rows that have it."""
    values = [r[key] for r in run.rows if key in r]
    return statistics.fmean(values[-last:])


def first_reach(runs, key: str, target: float, grid: list[float]) -> float:
    """First step on ``grid`` where the mean over ``runs`` of ``key`` reaches ``target`` (inf: never)."""
    import numpy as np

    mean = np.mean([np.interp(grid, *curve(r, key)) for r in runs], axis=0)
    reached = np.nonzero(mean >= target)[0]
    return float(grid[reached[0]]) if len(reached) else float("inf")


def bootstrap(stat, groups: list[list], boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(estimate, low, high): ``stat(*groups)`` and its 95% percentile interval, each group of seeds
    resampled with replacement on its own."""
    rng = random.Random(seed)
    est = stat(*groups)
    values = [stat(*[[rng.choice(g) for _ in g] for g in groups]) for _ in range(boot)]
    values = sorted(v for v in values if not math.isnan(v))  # a resample where the statistic is undefined
    if not values:
        return est, math.nan, math.nan
    n = len(values)
    return est, values[int(0.025 * n)], values[min(n - 1, int(0.975 * n))]


def verdict(
    low: float, high: float, est: float, *, above: float | None = None, below: float | None = None
) -> str:
    """holds / within noise / no for an interval that should lie ``above`` or ``below`` a value: holds
    when it does, no when it lies wholly on the other side, within noise when it straddles the value
    (wherever the estimate falls)."""
    if above is not None:
        return "holds" if low > above else ("no" if high <= above else "within noise")
    return "holds" if high < below else ("no" if low >= below else "within noise")


def fmt(e: tuple[float, float, float], digits: int = 2, scale: float = 1.0) -> str:
    est, low, high = (scale * v for v in e)
    return (
        f"{est:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"
        if scale != 1.0
        else (f"{est:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]")
    )


def eval_at(run, steps: float | None = None, iteration: int | None = None) -> float:
    """Greedy test success at ``iteration``, or at the evaluation whose environment steps are closest
    to ``steps`` (the protocol's equal-steps reading)."""
    rows = [r for r in run.rows if "eval/success" in r and r["iteration"] > 0]
    if iteration is not None:
        return next(r["eval/success"] for r in rows if r["iteration"] == iteration)
    return min(rows, key=lambda r: abs(r["rollout/env_steps"] - steps))["eval/success"]


def total_steps(runs) -> float:
    return statistics.fmean(r.rows[-1]["rollout/env_steps"] for r in runs)


def p1_ratio(outcome, dense) -> float:
    """P1's statistic: dense's steps to 0.9 x outcome's final rollout success over outcome's (nan when
    the outcome learner never succeeds)."""
    target = 0.9 * statistics.fmean(final(r, "rollout/success") for r in outcome)
    if target <= 0:
        return math.nan
    t = total_steps(outcome)
    grid = [t * k / 400 for k in range(1, 801)]
    t_outcome = first_reach(outcome, "rollout/success", target, grid)
    if math.isinf(t_outcome):  # its mean curve never reaches 0.9 x its own final level: undefined
        return math.nan
    return first_reach(dense, "rollout/success", target, grid) / t_outcome


def c_cell(v: dict) -> str:
    """(c)'s verdict with its two differences in points, from one view of :func:`decide`."""
    return f"{v['c_verdict']}: vs outcome {fmt(v['c_outcome'], 0, 100)}, vs dense {fmt(v['c_dense'], 0, 100)}"


def _mean_diff(a: list[float], b: list[float]) -> float:
    return statistics.fmean(a) - statistics.fmean(b)


def cut(run, iterations: int):
    """``run`` as it was at ``iterations`` (a baseline continued past RSPO's length for equal steps)."""
    from dataclasses import replace

    return replace(run, rows=[r for r in run.rows if r.get("iteration", 0) <= iterations])


def decide(outcome: list, dense: list, rspo: list, boot: int = 2000, with_a: bool = True) -> dict:
    """The claims for one environment, base algorithm and m from its finished runs: ``a`` (P1's
    ratio, or None without ``with_a``), ``b`` and ``c_outcome`` / ``c_dense`` per view (``steps``,
    ``iterations``) as (estimate, low, high) in success fractions, the verdicts, RSPO's mean final
    steps and the baselines' last steps (``short`` when they end before 0.9 x RSPO's)."""
    out: dict = {"seeds": (len(outcome), len(dense), len(rspo))}
    last_it = rspo[0].rows[-1]["iteration"]
    if with_a:  # P1 over the baselines as they were at RSPO's length (the lab: the premises' 30 iterations)
        short_o, short_d = [cut(r, last_it) for r in outcome], [cut(r, last_it) for r in dense]
        if statistics.fmean(final(r, "rollout/success") for r in short_o) <= 0:
            out["a"], out["a_verdict"] = None, "n/a (outcome never succeeds)"
        else:
            e = bootstrap(p1_ratio, [short_o, short_d], boot)
            out["a"] = e
            out["a_verdict"] = "yes" if e[2] <= 0.5 else ("within noise" if e[0] <= 0.5 else "no")
    steps = total_steps(rspo)
    out["rspo_steps"] = steps
    out["baseline_steps"] = min(r.rows[-1]["rollout/env_steps"] for r in dense + outcome)
    out["short"] = out["baseline_steps"] < 0.9 * steps
    rspo_final = [eval_at(r, iteration=last_it) for r in rspo]
    for view, base_pick in (
        ("steps", lambda r: eval_at(r, steps=steps)),
        ("iterations", lambda r: eval_at(r, iteration=last_it)),
    ):
        d_vals, o_vals = [base_pick(r) for r in dense], [base_pick(r) for r in outcome]
        b = bootstrap(_mean_diff, [d_vals, o_vals], boot)
        c1 = bootstrap(_mean_diff, [rspo_final, o_vals], boot)
        c2 = bootstrap(_mean_diff, [rspo_final, d_vals], boot)
        out[view] = {
            "b": b,
            "b_verdict": "yes" if b[2] < 0 else ("no" if b[1] > 0 else "within noise"),
            "c_outcome": c1,
            "c_dense": c2,
            "c_verdict": "yes"
            if c1[1] > 0 and c2[1] > 0
            else ("no" if c1[2] < 0 or c2[2] < 0 else "within noise"),
        }
    return out


def explorer_summary(run) -> dict:
    """What an RSPO run's explorer did and handed over: its mean and peak rollout success, the winning
    explorer episodes the learner's updates trained on (``handed``; 0 = captured: the swap gave the
    learner nothing; for runs logged before ``swap/trained_successes``, the updates that trained replayed
    turns, for a group-relative learner, and None for a critic's), the share of replayed groups holding a win, off-policy turns and tokens per
    update, and the importance weights (mean ratio, mean weight after truncation, fraction truncated)."""
    rows = [r for r in run.rows if "explorer/success" in r]
    if not rows:
        return {}

    def mean(key):
        values = [r[key] for r in rows if key in r]
        return statistics.fmean(values) if values else math.nan

    if all("swap/trained_successes" in r for r in rows):
        handed = sum(r["swap/trained_successes"] for r in rows)
    elif run.config.algo in GROUP_RELATIVE:
        # logged before swap/trained_successes: a group-relative learner trains a replayed group's
        # turns only when the group holds a win and a loss, so trained turns mean a handed-over win
        handed = sum(r.get("swap/turns", 0) > 0 for r in rows)
    else:  # a critic trains every replayed turn: whether one was a win was not logged
        handed = None
    return {
        "explorer_success": mean("explorer/success"),
        "explorer_peak": max(r["explorer/success"] for r in rows),
        "handed": handed,
        "captured": handed == 0 if handed is not None else None,
        "success_group_frac": mean("swap/success_group_frac"),
        "turns": mean("swap/turns"),
        "tokens": mean("swap/tokens"),
        "is_ratio_mean": mean("swap/is_ratio_mean"),
        "is_weight_mean": mean("swap/is_weight_mean"),
        "truncated_frac": mean("swap/truncated_frac"),
    }


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def _learned(run, level: float) -> str:
    """When the run's own rollouts first reached ``level`` and where its greedy test success went."""
    from rspo.study.analysis import steps_to_level

    steps = steps_to_level(run, level)
    total = run.rows[-1].get("rollout/env_steps", 0)
    evals = [r["eval/success"] for r in run.rows if "eval/success" in r]
    reached = (
        f"its own rollouts first won {_pct(level)} of episodes (a 3-iteration mean) after {steps:,} "
        f"environment steps"
        if steps is not None
        else f"its own rollouts never won {_pct(level)} of episodes in its {total:,} environment steps"
    )
    peak = max(evals)
    # a peak 10 points or more above the end is named (the tolerance: 0.5 - 0.4 is under 0.1 in floats)
    tail = f" (its peak: {_pct(peak)})" if peak - evals[-1] >= 0.1 - 1e-9 else ""
    return f"{reached}; its greedy test success went from {_pct(evals[0])} to {_pct(evals[-1])}{tail}"


def run_story(runs: dict, level: float = 0.25) -> list[str]:
    """Sentences that say what each of one seed's runs did (``runs``: reward mode -> finished run), every
    number and every word of direction computed from the runs' logs: what notebook 00 prints under its
    figure. RSPO's sentences say what its explorer handed over, and why a learner can sit at 0 while its
    explorer wins."""
    names = {"outcome": "The outcome learner", "dense": "The dense learner", "rspo": "RSPO's learner"}
    lines = []
    for reward, run in runs.items():
        line = f"{names.get(reward, reward)}: {_learned(run, level)}."
        if reward == "dense":
            process = [r["rollout/process_return"] for r in run.rows if "rollout/process_return" in r]
            if len(process) > 1:
                moved = (
                    "rose" if process[-1] > process[0] else "fell" if process[-1] < process[0] else "stayed"
                )
                line += (
                    f" Its process return per episode (what the dense reward pays) {moved} from "
                    f"{process[0]:.2f} to {process[-1]:.2f}."
                )
        lines.append(line)
        if reward != "rspo":
            continue
        summary = explorer_summary(run)
        if not summary:
            continue
        rows = [r for r in run.rows if "explorer/success" in r]
        offered = sum(r.get("swap/successes", 0) for r in rows)
        explorer = (
            f"Its explorer, paid the dense reward, won {_pct(summary['explorer_success'])} of its episodes "
            f"on average (peak {_pct(summary['explorer_peak'])}) and offered {offered:,} winning episodes"
        )
        if summary["handed"] == 0:
            explorer += (
                "; the learner's updates trained on none of them (the explorer handed over nothing): the "
                "learner learned from its own outcome rewards only, as GRPO does."
            )
        elif summary["handed"] is not None:
            explorer += (
                f"; the learner's updates trained on {summary['handed']:,} of them, relabelled with the "
                f"outcome reward (mean importance weight after truncation "
                f"{summary['is_weight_mean']:.2f})."
            )
        else:
            explorer += "."
        lines.append(explorer)
        zero = 0
        for r in rows:
            if r.get("rollout/success", 0) > 0:
                break
            zero += 1
        won_meanwhile = max((r["explorer/success"] for r in rows[:zero]), default=0.0)
        if zero >= 2 and won_meanwhile > 0:
            lines.append(
                f"For its first {zero} iterations the learner's own rollouts won nothing while its explorer "
                f"already won up to {_pct(won_meanwhile)}: a group-relative learner learns from a group "
                "only when it holds a win and a loss, so until its own samples win, only the explorer's "
                "replayed episodes move it."
                if run.config.algo in GROUP_RELATIVE
                else f"For its first {zero} iterations the learner's own rollouts won nothing while its "
                f"explorer already won up to {_pct(won_meanwhile)}."
            )
    return lines


def by_reward(runs) -> dict[tuple, dict[str, list]]:
    """Finished runs grouped by (env, algo, misalignment) and then reward mode (ablations left out:
    only runs under their default name, ``<env>-<algo>-<reward>-s<seed>``); RSPO's budget-matched
    form (``<env>-<algo>-rspo-matched-s<seed>``) is a mode of its own, ``rspo-matched``."""
    groups: dict[tuple, dict[str, list]] = {}
    for run in runs:
        cfg = run.config
        matched = cfg.reward == "rspo" and cfg.swap_budget == "matched"
        mode = "rspo-matched" if matched else cfg.reward
        if not run.finished or cfg.name != f"{cfg.env}-{cfg.algo}-{mode}-s{cfg.seed}":
            continue
        groups.setdefault((cfg.env, cfg.algo, cfg.misalignment), {}).setdefault(mode, []).append(run)
    return groups


def baselines(groups: dict, env: str, algo: str, m: float) -> tuple[list, list, list]:
    """The outcome, dense and RSPO runs of (env, algo, m) in :func:`by_reward`'s ``groups``. The outcome
    learner's training does not depend on m, so its m = 0 runs serve an m that has none."""
    got = groups.get((env, algo, m), {})
    outcome = got.get("outcome") or groups.get((env, algo, 0.0), {}).get("outcome", [])
    return outcome, got.get("dense", []), got.get("rspo", [])


def lab_runs(root: str | Path) -> list:
    """Every finished run under ``root``'s ``m<m>/`` folders (``benchmarks/bench_learning.py --out
    <root>/m<m>`` puts them in ``m<m>/lab/``; archived logs lie in ``m<m>/`` itself)."""
    runs = []
    for folder in sorted(Path(root).glob("m*")):
        runs += load_runs(folder / "lab" if (folder / "lab").is_dir() else folder)
    return runs


def claims_table(
    runs, boot: int = 2000, algos: tuple = ("grpo", "ppo", "gigpo")
) -> tuple[list[str], list[list[str]]]:
    """The claims table over finished ``runs`` (any mix of environments, base algorithms and m): one
    line per (env, m, algo) that has outcome, dense and RSPO runs. The outcome learner's training
    does not depend on m, so outcome runs at m = 0 serve every m of their environment and algo; (a)
    is decided at m = 0 only. Differences in points of success (%)."""
    groups = by_reward(runs)
    head = [
        "env",
        "m",
        "algo",
        "seeds o/d/r",
        "(a) outcome slow",
        "(b) dense biased",
        "(c) RSPO >= both",
        "(c) at equal iterations",
        "explorer captured",
    ]
    lines = []
    order = {a: i for i, a in enumerate(algos)}
    for env, algo, m in sorted(groups, key=lambda k: (k[0], k[2], order.get(k[1], 99), k[1])):
        outcome, dense, _ = baselines(groups, env, algo, m)
        for form in ("rspo", "rspo-matched"):  # each RSPO form its own row (protocol 2: never pooled)
            rspo = groups[(env, algo, m)].get(form, [])
            if outcome and dense and rspo:
                lines.append(_claims_line(env, algo, m, outcome, dense, rspo, boot, form))
    return head, lines


def _claims_line(env, algo, m, outcome, dense, rspo, boot, form) -> list[str]:
    """One line of :func:`claims_table`; the algo cell names a form other than the default one."""
    d = decide(outcome, dense, rspo, boot, with_a=m == 0.0)
    # (a) compares dense with outcome at m = 0 only (the protocol's P1): at another m the cell says so
    a = "n/a: decided at m = 0" if m != 0.0 else d["a_verdict"] + (f": {fmt(d['a'])}" if d["a"] else "")
    cells = []
    for view in ("steps", "iterations"):
        v = d[view]
        cells.append(
            (
                f"{v['b_verdict']}: {fmt(v['b'], 0, 100)}",
                c_cell(v),
            )
        )
    short = (
        f" [baselines end at {d['baseline_steps'] / d['rspo_steps']:.0%} of RSPO's steps]"
        if d["short"]
        else ""
    )
    return [
        env,
        f"{m:g}",
        algo if form == "rspo" else f"{algo} ({form.removeprefix('rspo-')})",
        "/".join(map(str, d["seeds"])),
        a,
        cells[0][0] + short,
        cells[0][1],
        cells[1][1],
        captured_cell(outcome, dense, rspo, boot),
    ]


def captured_cell(outcome: list, dense: list, rspo: list, boot: int = 2000) -> str:
    """``k of n`` RSPO runs whose explorer handed the learner no success (:func:`explorer_summary`), with
    their seeds and (c) at equal steps again without them; ``not logged`` where a run cannot tell (a
    critic's runs logged before ``swap/trained_successes``)."""
    flags = [explorer_summary(run).get("captured") for run in rspo]
    if any(flag is None for flag in flags):
        return "not logged"
    captured = [run for run, flag in zip(rspo, flags, strict=True) if flag]
    kept = [run for run, flag in zip(rspo, flags, strict=True) if not flag]
    cell = f"{len(captured)} of {len(rspo)}"
    if not captured:
        return cell
    cell += f" (seed {', '.join(str(r.config.seed) for r in captured)})"
    if kept:
        v = decide(outcome, dense, kept, boot, with_a=False)["steps"]
        cell += f"; (c) without them: {c_cell(v)}"
    return cell


def ablation_groups(runs) -> dict[tuple, list]:
    """Finished ablation runs (``<env>-<algo>-rspo-<change>-s<seed>``, :func:`rspo.study.experiments.ablation_configs`)
    grouped by (env, algo, misalignment, change)."""
    groups: dict[tuple, list] = {}
    for run in runs:
        cfg = run.config
        prefix, suffix = f"{cfg.env}-{cfg.algo}-rspo-", f"-s{cfg.seed}"
        if not run.finished or not (cfg.name.startswith(prefix) and cfg.name.endswith(suffix)):
            continue
        change = cfg.name[len(prefix) : -len(suffix)]
        if change:
            groups.setdefault((cfg.env, cfg.algo, cfg.misalignment, change), []).append(run)
    return groups


def ablation_table(runs, boot: int = 2000) -> tuple[list[str], list[list[str]]]:
    """The protocol's ablation rows: each variant of RSPO read with the rules of (c) against the
    outcome and dense runs of its env, algo and m (equal steps), and against RSPO's default at its last
    iteration. Differences in points of success (%)."""
    groups = by_reward(runs)
    head = [
        "env",
        "m",
        "algo",
        "variant",
        "seeds",
        "steps",
        "(c) variant >= both",
        "variant - RSPO (equal its)",
    ]
    lines = []
    for (env, algo, m, change), variant in sorted(ablation_groups(runs).items(), key=lambda kv: kv[0]):
        outcome, dense, rspo = baselines(groups, env, algo, m)
        if not (outcome and dense):
            continue
        d = decide(outcome, dense, variant, boot, with_a=False)
        v = d["steps"]
        c = c_cell(v)
        vs_rspo = ""
        if rspo:
            last_it = variant[0].rows[-1]["iteration"]
            e = bootstrap(
                _mean_diff,
                [
                    [eval_at(r, iteration=last_it) for r in variant],
                    [eval_at(r, iteration=last_it) for r in rspo],
                ],
                boot,
            )
            vs_rspo = f"{fmt(e, 0, 100)} ({len(rspo)} seeds)"
        lines.append([env, f"{m:g}", algo, change, str(len(variant)), f"{d['rspo_steps']:,.0f}", c, vs_rspo])
    return head, lines
