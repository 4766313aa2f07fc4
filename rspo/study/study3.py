"""The lab's study 3 (docs/lab/protocol-3.md): does RSPO get there first?

At study 2's chosen setting, on GRPO, with fresh seeds 40-49: outcome, dense and RSPO in both forms.
The statistic is each run's mean greedy test success over the baselines' budget T of environment
steps (:func:`rspo.study.study2.success_area`); (c') asks whether RSPO's budget-matched form lies above
both baselines. The runs live in ``<root>/study3/<setting folder>/`` (``results/lab/study3/`` once
archived), trained by ``python benchmarks/lab_study2.py train --phase study3``.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from rspo.study import study2

SEEDS = tuple(range(40, 50))  # fresh: 10-12 the scan, 20-29 study 2, 30-39 held for its 2nd confirmation
PHASE = "study3"  # the folder under the root (the archive's root is results/lab)
PRIMARY = "matched"  # the RSPO form whose (c') is the headline; the extra form's row is reported beside
ARCHIVE_ROOT = study2.ARCHIVE.parent  # results/lab: its study3/ holds the archived runs


def setting() -> study2.Setting:
    return study2.find_setting(study2.CHOSEN)


def configs(root) -> list:
    """The 40 runs, seed-major (a phase cut short has whole seeds): outcome, dense, RSPO matched and
    extra, on GRPO at study 2's chosen setting, each as protocol 2 trains it."""
    s = setting()
    out = []
    for seed in SEEDS:
        out += [study2._config(root, PHASE, s, "grpo", reward, seed) for reward in ("outcome", "dense")]
        out += [
            study2._config(root, PHASE, s, "grpo", "rspo", seed, swap_budget=budget, iterations=its)
            for budget, its in study2.RSPO_ITERATIONS.items()
        ]
    return out


def missing(root) -> list[str]:
    """The names of the study's runs not finished under ``root``."""
    from rspo.study.analysis import load_run

    return [
        cfg.name for cfg in configs(root) if not (cfg.run_dir.is_dir() and load_run(cfg.run_dir).finished)
    ]


def c_prime(low_outcome: float, high_outcome: float, low_dense: float, high_dense: float) -> str:
    """(c')'s label from the two intervals (RSPO - outcome, RSPO - dense), by protocol 3's rule."""
    if low_outcome > 0 and low_dense > 0:
        return "yes"
    if high_outcome < 0 or high_dense < 0:
        return "no"
    return "within noise"


def table(root, boot: int = 2000) -> tuple[list[str], list[list[str]]]:
    """Protocol 3's table: per RSPO form with finished runs, the mean greedy test success over [0, T]
    of each method, RSPO's two differences (95% bootstrap intervals), (c')'s label, (c') without the
    seeds whose explorer was captured, and the capture count."""
    from rspo.study.claims import _mean_diff, bootstrap, explorer_summary, fmt, total_steps

    s = setting()
    outcome, dense = study2.setting_runs(root, PHASE, s)
    head = [
        "RSPO form",
        "seeds o/d/r",
        "T (steps)",
        "mean success over [0, T]: o / d / RSPO (%)",
        "RSPO - outcome (pts)",
        "RSPO - dense (pts)",
        "(c') RSPO above both",
        "without captured seeds",
        "explorer captured",
    ]
    lines: list[list[str]] = []
    if not outcome or not dense:
        return head, lines
    t = total_steps(outcome)
    o_areas = [study2.success_area(r, t) for r in outcome]
    d_areas = [study2.success_area(r, t) for r in dense]
    for budget, its in study2.RSPO_ITERATIONS.items():
        runs = study2.finished_runs(
            Path(root) / PHASE / s.name, algo="grpo", reward="rspo", swap_budget=budget, iterations=its
        )
        if not runs:
            continue

        def verdict(members):
            areas = [study2.success_area(r, t) for r in members]
            vs_o = bootstrap(_mean_diff, [areas, o_areas], boot)
            vs_d = bootstrap(_mean_diff, [areas, d_areas], boot)
            return areas, vs_o, vs_d, c_prime(vs_o[1], vs_o[2], vs_d[1], vs_d[2])

        areas, vs_o, vs_d, label = verdict(runs)
        captured = [r for r in runs if explorer_summary(r)["captured"]]
        kept = [r for r in runs if r not in captured]
        without = (
            "as all (none captured)" if not captured else ("none left" if not kept else verdict(kept)[3])
        )
        lines.append(
            [
                budget + (" (the headline)" if budget == PRIMARY else ""),
                f"{len(outcome)}/{len(dense)}/{len(runs)}",
                f"{t:,.0f}",
                " / ".join(f"{100 * statistics.fmean(a):.0f}" for a in (o_areas, d_areas, areas)),
                fmt(vs_o, 0, 100),
                fmt(vs_d, 0, 100),
                label,
                without,
                f"{len(captured)} of {len(runs)}",
            ]
        )
    return head, lines
