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


def forms(root):
    """(RSPO form, outcome runs, dense runs, that form's RSPO runs) for every form with finished runs
    under ``<root>/study3`` (nothing until both baselines have finished runs)."""
    s = setting()
    outcome, dense = study2.setting_runs(root, PHASE, s)
    if not outcome or not dense:
        return
    for budget, its in study2.RSPO_ITERATIONS.items():
        runs = study2.finished_runs(
            Path(root) / PHASE / s.name, algo="grpo", reward="rspo", swap_budget=budget, iterations=its
        )
        if runs:
            yield budget, outcome, dense, runs


def _verdict(members: list, t: float, o_areas: list, d_areas: list, boot: int):
    """(areas, RSPO - outcome, RSPO - dense, (c')'s label) of ``members`` against the baselines' areas."""
    from rspo.study.claims import _mean_diff, bootstrap

    areas = [study2.success_area(r, t) for r in members]
    vs_o = bootstrap(_mean_diff, [areas, o_areas], boot)
    vs_d = bootstrap(_mean_diff, [areas, d_areas], boot)
    return areas, vs_o, vs_d, c_prime(vs_o[1], vs_o[2], vs_d[1], vs_d[2])


def results(root, boot: int = 2000, groups: list | None = None) -> list[dict]:
    """Protocol 3's numbers per RSPO form: ``form``, ``seeds`` (o, d, r), ``T``, ``means`` (o, d, RSPO:
    mean greedy test success over [0, T], fractions), ``vs_outcome`` and ``vs_dense`` (estimate, low,
    high), ``label`` ((c')), ``without`` ((c') without captured seeds) and ``captured`` (their number)."""
    from rspo.study.claims import explorer_summary, total_steps

    out = []
    for budget, outcome, dense, runs in forms(root) if groups is None else groups:
        t = total_steps(outcome)
        o_areas = [study2.success_area(r, t) for r in outcome]
        d_areas = [study2.success_area(r, t) for r in dense]

        areas, vs_o, vs_d, label = _verdict(runs, t, o_areas, d_areas, boot)
        captured = [r for r in runs if explorer_summary(r)["captured"]]
        kept = [r for r in runs if r not in captured]
        without = (
            "as all (none captured)"
            if not captured
            else ("none left" if not kept else _verdict(kept, t, o_areas, d_areas, boot)[3])
        )
        out.append(
            {
                "form": budget,
                "seeds": (len(outcome), len(dense), len(runs)),
                "T": t,
                "means": tuple(statistics.fmean(a) for a in (o_areas, d_areas, areas)),
                "vs_outcome": vs_o,
                "vs_dense": vs_d,
                "label": label,
                "without": without,
                "captured": len(captured),
            }
        )
    return out


TABLE_HEAD = [
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


def table(root, boot: int = 2000, found: list[dict] | None = None) -> tuple[list[str], list[list[str]]]:
    """Protocol 3's table: per RSPO form with finished runs, the mean greedy test success over [0, T]
    of each method, RSPO's two differences (95% bootstrap intervals), (c')'s label, (c') without the
    seeds whose explorer was captured, and the capture count (:func:`results`, formatted)."""
    from rspo.study.claims import fmt

    lines = []
    for r in results(root, boot) if found is None else found:
        lines.append(
            [
                r["form"] + (" (the headline)" if r["form"] == PRIMARY else ""),
                "/".join(map(str, r["seeds"])),
                f"{r['T']:,.0f}",
                " / ".join(f"{100 * m:.0f}" for m in r["means"]),
                fmt(r["vs_outcome"], 0, 100),
                fmt(r["vs_dense"], 0, 100),
                r["label"],
                r["without"],
                f"{r['captured']} of {r['seeds'][2]}",
            ]
        )
    return TABLE_HEAD, lines


def beside_table(root, boot: int = 2000, groups: list | None = None) -> tuple[list[str], list[list[str]]]:
    """What protocol 3 reports beside the verdict, per RSPO form: greedy test success at T/4, T/2, 3T/4
    and T (:func:`rspo.study.study2.speed_cells`), and protocol 2's (c) at equal steps and at equal
    iterations on these seeds (:func:`rspo.study.claims.decide`). None of it is the headline."""
    from rspo.study.claims import c_cell, decide

    head = ["RSPO form"] + study2.SPEED_HEAD[:4] + ["(c) at equal steps", "(c) at equal iterations"]
    lines = []
    for budget, outcome, dense, runs in forms(root) if groups is None else groups:
        d = decide(outcome, dense, runs, boot, with_a=False)
        speed = study2.speed_cells(outcome, dense, runs, boot)[:4]
        lines.append([budget] + speed + [c_cell(d["steps"]), c_cell(d["iterations"])])
    return head, lines


COMMAND = "python benchmarks/lab_study2.py study3 --root results/lab"


def headline(root, boot: int = 2000, found: list[dict] | None = None, left: list | None = None) -> str:
    """Study 3's headline, computed from its numbers: (c')'s label for the matched form with both
    differences, or how many runs are finished while any is missing."""
    from rspo.study.claims import fmt

    left, total = len(missing(root) if left is None else left), len(configs(root))
    if left:
        return f"Study 3 (protocol 3, seeds {SEEDS[0]}-{SEEDS[-1]}): {total - left} of {total} runs finished; its verdict is read when all are."
    found = results(root, boot) if found is None else found
    (r,) = [r for r in found if r["form"] == PRIMARY]
    o, d, m = (100 * v for v in r["means"])
    return (
        f"Study 3 (registered before its runs; GRPO at {study2.CHOSEN}, fresh seeds {SEEDS[0]}-{SEEDS[-1]}): "
        f"(c') RSPO's budget-matched form above both baselines in mean greedy test success over the first "
        f"T = {r['T']:,.0f} environment steps is **{r['label']}** - RSPO {m:.0f}%, outcome {o:.0f}%, dense "
        f"{d:.0f}%; RSPO - outcome {fmt(r['vs_outcome'], 0, 100)}, RSPO - dense {fmt(r['vs_dense'], 0, 100)} "
        "points (95% intervals)."
    )


def lags(head: list[str], row: list[str]) -> str:
    """Where, of T/4, T/2, 3T/4 and T, RSPO's mean lies below each baseline's (a row of
    :func:`beside_table`), in words. Read from the row's cells as printed (whole points) on purpose:
    the sentence then never says "below" where the table beside it shows two equal numbers."""
    below = {"outcome": [], "dense": []}
    for name, cell in zip(study2.SPEED_NAMES, row[1:5], strict=True):
        o, d, r = (float(v) for v in cell.split(" / "))
        below["outcome"] += [name] if r < o else []
        below["dense"] += [name] if r < d else []
    return "; ".join(f"below {k}'s mean at {', '.join(v) if v else 'none of them'}" for k, v in below.items())


def study2_reading(found: list[dict], boot: int = 2000) -> list[str]:
    """The post-hoc reading of study 2 that protocol 3 tests (the same statistic, GRPO, matched form,
    on study 2's archived seeds) beside this study's, as a bullet; nothing without study 2's archive."""
    from rspo.study.claims import fmt

    setting = study2.find_setting(study2.CHOSEN)
    head, lines = (
        study2.speed_table(study2.ARCHIVE, setting, boot=boot) if study2.ARCHIVE.is_dir() else ([], [])
    )
    rows = [dict(zip(head, line, strict=True)) for line in lines if line[:2] == ["grpo", PRIMARY]]
    mine = [r for r in found if r["form"] == PRIMARY]
    if not rows or not mine:
        return []
    then, now = rows[0], mine[0]
    seeds = f"{study2.CONFIRM_SEEDS[0][0]}-{study2.CONFIRM_SEEDS[0][-1]}"
    return [
        f"- Study 2's post-hoc reading that protocol 3 tests (GRPO, {PRIMARY} form, seeds {seeds}, read after "
        f"its verdicts): RSPO - outcome {then['RSPO - outcome (pts)']}, RSPO - dense {then['RSPO - dense (pts)']} "
        f"points; on the fresh seeds {SEEDS[0]}-{SEEDS[-1]}: {fmt(now['vs_outcome'], 0, 100)} and "
        f"{fmt(now['vs_dense'], 0, 100)}."
    ]


def finding_markdown(root, boot: int = 2000) -> str:
    """Study 3's block in docs/lab/findings.md (between ``<!-- study3 -->`` markers; a test keeps the
    copy equal to this): the headline, the table, what is reported beside it, and sentences computed
    from those numbers."""
    from rspo.study.analysis import to_markdown

    groups, left = list(forms(root)), missing(root)  # once here, not again per section
    found = results(root, boot, groups)
    out = [headline(root, boot, found, left), ""]
    if left:
        return "\n".join(out)
    out += [to_markdown(*table(root, boot, found)).rstrip("\n"), ""]
    head, rows = beside_table(root, boot, groups)
    out += [
        "Reported beside the verdict, none of it the headline: greedy test success at fractions of T, and "
        "protocol 2's (c) on these seeds (points, 95% intervals):",
        "",
        to_markdown(head, rows).rstrip("\n"),
        "",
    ]
    for r, row in zip(found, rows, strict=True):
        out.append(
            f"- {r['form']} form: (c') {r['label']}; explorer captured in {r['captured']} of {r['seeds'][2]} "
            f"runs, (c') without them: {r['without']}; at T/4, T/2, 3T/4 and T RSPO's mean greedy success is "
            f"{lags(head, row)}."
        )
    out += study2_reading(found, boot)
    out += ["", f"Rebuilt from the archived logs by `{COMMAND}`; the curves, every seed, in notebook 05."]
    return "\n".join(out) + "\n"
