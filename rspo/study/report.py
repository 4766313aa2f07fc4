"""The report of ``rspo reproduce``: ``report.md`` and a styled, self-contained ``report.html``.

In order: a header (profile, date, machine, total time), what the profile shows and what is noise at
its number of seeds, the claims table (:mod:`rspo.study.claims`, as notebook 05 saved it in
``results.json``), the results table with a caption true to its seed counts, the figures, the
executed notebooks (rendered to HTML by nbconvert, with each one's key numbers from
``results.json``), the machine and the reconstruction note.

In ``report.html`` the figures are inline: a PNG as an image, a plotly figure (saved as standalone
HTML by :func:`rspo.notebook.plots.save_figure`) redrawn from its data, with plotly.js included once in the
page. The rendered notebooks share one ``plotly.min.js`` beside them instead of a copy each (the
HTML machinery: :mod:`rspo.study.report_html`).
"""

from __future__ import annotations

import html
import json
import os
import platform
import time
from pathlib import Path

from rspo.core.atomic import atomic_write_text
from rspo.core.paths import CHECKOUT as ROOT
from rspo.study.report_html import Report, figures_blocks, page, render_notebooks
from rspo.study.results import load_results

RECONSTRUCTION_NOTE = (
    "RSPO (arXiv 2607.04713) is reconstructed: the paper's equations are not public. The kit's RSPO "
    "trains an explorer on the dense reward, relabels its episodes with the outcome reward (the swap), "
    "keeps them in a replay buffer, and adds to the learner's outcome-reward PPO-clip loss a "
    "truncated-importance-weighted term on those episodes (weight lambda, truncation c). The paper's "
    "numbers quoted beside ours are the paper's; every number of ours was measured by this kit."
)

# what each profile is, in words (the numbers of the run follow it in the report)
STORIES = {
    "quick": (
        "The quick profile is the kit's **credit-assignment lab** (docs/lab/) at study 2's chosen setting "
        "(docs/lab/protocol-2.md): the `detour` environment, a passage of **seven rooms** whose gates "
        "open with the right mechanism and a chest in the last room. The process reward pays each gate "
        "opened (1.0) and, at misalignment **m = 0.15**, also pays for reading a map in the first room, "
        "again and again: it looks like progress and is a detour. GRPO trains three learners from the "
        "same warm start, **seeds 0 and 1**, 60 iterations each: on the outcome reward only, on the "
        "dense reward (outcome + process), and with RSPO in its budget-matched form (an explorer paid "
        "the dense reward on half of each iteration's tasks, whose episodes the learner sees with the "
        "outcome reward only; so all three sample the same environment steps per iteration). The "
        "questions, which the claims table below decides from the runs by the protocol's rule: (a) is "
        "the outcome learner slow, (b) is the dense learner misled, (c) does RSPO end above both? "
        "Study 2's premise gate found (a) and (b) at this setting over 10 seeds; two seeds decide little."
    ),
    "smoke": (
        "The smoke profile runs the quick profile's notebooks (the `detour` lab, GRPO, seeds 0 and 1) at "
        "the smoke training scale, **2 iterations** of 2 tasks: a check that the whole pipeline runs, from the warm "
        "start to this report. Two iterations move no policy far: **none of its numbers is a result**, "
        "and every difference between methods below is noise."
    ),
    "cpu": (
        "The cpu profile is the full CPU table: household and shop, GRPO, PPO and GiGPO, each with the "
        "outcome reward, the dense reward and RSPO, three seeds, and RSPO's ablations on GRPO (one "
        "seed). docs/results-cpu.md holds a published run of it."
    ),
    "gpu": (
        "The gpu profile is the cpu profile's table with a real instruct model (LoRA, generate mode) on "
        "one GPU, and the two swap variants as ablations."
    ),
}


def seconds_text(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, s = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {s} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def machine_text() -> str:
    gpu = ""
    try:
        import torch

        if torch.cuda.is_available():
            gpu = f", GPU {torch.cuda.get_device_name(0)}"
    except Exception:  # torch is a dependency; a broken CUDA set-up must not stop the report
        pass
    return (
        f"{platform.node() or 'this machine'}: {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs{gpu}"
    )


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for pkg in ("torch", "transformers", "trl", "peft", "accelerate", "papermill", "plotly"):
        try:
            out.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            out.append(f"{pkg} (not installed)")
    return ", ".join(out)


def seed_caption(agg: list[dict]) -> str:
    """The results table's caption, true to its seed counts (one seed: no spread to speak of)."""
    counts = sorted({row["seeds"] for row in agg})
    base = "Success in % (greedy evaluation); change = final − initial."
    if counts == [1]:
        return (
            f"{base} **One seed per row**: each number is a single run's, with no spread over seeds, so "
            "a difference between rows says nothing about whether it is more than noise."
        )
    if len(counts) == 1:
        return f"{base} Mean ± std over {counts[0]} seeds (the seeds column)."
    return (
        f"{base} Mean ± std over the seeds column's count; a row with one seed shows that single run's "
        "number, without a spread."
    )


def main_runs(trained: list) -> list:
    """The table's runs: ``<env>-<algo>-<reward>-s<seed>``, ablations left out."""
    return [
        r
        for r in trained
        if r.config.name == f"{r.config.env}-{r.config.algo}-{r.config.reward}-s{r.config.seed}"
    ]


def _span(values) -> str:
    values = sorted(set(values))
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in values)
    if ints and len(values) > 2 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}–{values[-1]}"
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values)


def setting_line(runs: list) -> str:
    """What the runs are, read from their configs: envs, m, algos, reward modes, seeds, iterations."""
    cfgs = [r.config for r in runs]
    return (
        f"**The runs** ({len(runs)}): {_span(c.env for c in cfgs)} at m = {_span(c.misalignment for c in cfgs)}; "
        f"{_span(c.algo for c in cfgs)} with the {_span(c.reward for c in cfgs)} rewards; seeds "
        f"{_span(c.seed for c in cfgs)}; {_span(c.iterations for c in cfgs)} iterations of "
        f"{_span(c.tasks_per_iter for c in cfgs)} tasks × {_span(c.group_size for c in cfgs)} copies."
    )


def noise_lines(trained: list) -> list[str]:
    """What the run's own numbers say, and how far its seeds disagree: the story's second half."""
    from rspo.study.analysis import method_name

    runs = main_runs(trained)
    finals: dict[tuple, list[float]] = {}
    for run in runs:
        evals = [r["eval/success"] for r in run.rows if "eval/success" in r]
        if evals:
            key = (run.config.env, run.config.algo, method_name(run.config))
            finals.setdefault(key, []).append(100 * evals[-1])
    if not finals:
        return []
    seeds = sorted({len(v) for v in finals.values()})
    n = str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}"
    ends = "; ".join(
        f"{env} {algo} {method} {sum(v) / len(v):.0f}%" for (env, algo, method), v in sorted(finals.items())
    )
    spread = max(max(v) - min(v) for v in finals.values())
    lines = [
        setting_line(runs),
        f"**Where they end** (final greedy test success, mean over {n} seed{'' if n == '1' else 's'}): {ends}.",
    ]
    if seeds[-1] < 2:
        lines.append(
            "**What is noise here.** With one seed per method there is no spread over seeds to compare "
            "against: any difference between methods may be noise, and no claim can be decided."
        )
    else:
        lines.append(
            f"**What is noise here.** {n} seeds per method: the seeds of one method end up to {spread:.0f} "
            "points apart here, and the claims' 95% bootstrap intervals (each method's seeds resampled) are "
            "as wide as that spread allows. A verdict of 'within noise' is the expected one at this number "
            "of seeds; read the direction, not the size. The committed runs' claims beside this run's, at "
            "more seeds, are the kit's result."
        )
    return lines


#: the committed runs' claims table, as data: written by ``benchmarks/lab_premises.py --runs
#: results/lab/study1/runs --claims results/cpu/runs`` from the committed logs
COMMITTED_CLAIMS = ROOT / "results" / "lab" / "study1" / "claims.json"


def committed_claims(envs: set[str] | None = None, path: Path = COMMITTED_CLAIMS) -> str:
    """The committed runs' claims table (:data:`COMMITTED_CLAIMS`; its rows of ``envs`` only, if
    given) in Markdown, or '' outside a checkout."""
    if not path.is_file():
        return ""
    from rspo.study.analysis import to_markdown

    table = json.loads(path.read_text())
    rows = [row for row in table["rows"] if not envs or row[0] in envs]
    return to_markdown(table["head"], rows) if rows else ""


def claims_block(results: dict, trained: list, ran: set[str]) -> list[str]:
    """The claims table over this run's runs: notebook 05's (``results.json``, when it ran in this job:
    ``ran``, the notebooks' stems), else decided here."""
    from rspo.study.analysis import to_markdown

    saved = results.get("05_analysis", {}).get("claims") if "05_analysis" in ran else None
    if saved:
        head, rows, source = saved["head"], saved["rows"], "notebook 05, from `results.json`"
    else:
        from rspo.study.claims import claims_table

        try:
            head, rows = claims_table(trained)
        except Exception as err:  # runs too short for a reading: say so, not a traceback
            head, rows = [], []
            source = f"not decided: {type(err).__name__}: {err}"
        else:
            source = "decided here from the runs folder (no claims of notebook 05 from this job)"
    lines = [
        "The paper's three claims, decided by the rules `docs/lab/protocol.md` fixed before any RSPO run "
        "(`rspo.study.claims`): (a) outcome is slow, (b) dense is biased, (c) RSPO ≥ both. Differences in "
        "points of final greedy test success, 95% bootstrap intervals over seeds; seeds are "
        f"outcome/dense/RSPO. Source: {source}.",
        "",
    ]
    if rows:
        lines += [to_markdown([str(h) for h in head], [[str(c) for c in r] for r in rows]), ""]
    else:
        lines += [
            "(no claim decided: it needs finished outcome, dense and RSPO runs of one env and algo)",
            "",
        ]
    committed = committed_claims({r.config.env for r in trained})
    if committed:
        lines += [
            "For comparison, the committed runs' table (results/lab/study1/claims.json: the lab's study 1 "
            "at 10 seeds for GRPO, 5 for PPO and GiGPO; household and shop from results/cpu/runs at 3):",
            "",
            committed,
            "",
        ]
    return lines


def key_numbers(entry: dict, width: int = 160) -> str:
    """A notebook's ``results.json`` entry in one short line: its scalars and dicts of scalars."""
    parts = []
    for key, value in entry.items():
        if isinstance(value, bool | int | float | str):
            parts.append(f"{key} {value:.3g}" if isinstance(value, float) else f"{key} {value}")
        elif (
            isinstance(value, dict)
            and 0 < len(value) <= 6
            and all(isinstance(v, int | float | str) for v in value.values())
        ):
            inner = ", ".join(
                f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in value.items()
            )
            parts.append(f"{key}: {inner}")
        elif isinstance(value, list) and key == "runs":
            parts.append(f"{len(value)} runs")
    text = "; ".join(parts)
    return text if len(text) <= width else text[: width - 1] + "…"


def write_report(
    profile: str,
    out: Path,
    runs: list,
    runs_folder: Path,
    status_lines: list[str] | None = None,
    total_seconds: float | None = None,
    render: bool = True,
) -> Path:
    """``report.md`` and ``report.html`` in ``out`` (see the module docstring) over the training runs in
    ``runs_folder``; ``status_lines``: an opening saying how many of the profile's table runs are
    finished (``rspo reproduce --finished-only``); ``total_seconds``: the job's time (default: the notebooks' sum); ``render``: the notebooks to HTML."""
    from rspo.core.profiles import PROFILE_NOTES
    from rspo.study.analysis import aggregate, load_runs, mixed_starts, results_table, summarise, to_markdown

    results = load_results(out)
    total = total_seconds if total_seconds is not None else sum(r.seconds for r in runs)
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    note = PROFILE_NOTES.get(profile, profile)
    facts = [
        ("profile", f"{profile} — {note}"),
        ("date", date),
        ("machine", machine_text()),
        ("total time", f"{seconds_text(total)} ({len(runs)} notebooks)"),
    ]
    title = f"rspo kit — reproduction report (`{profile}` profile)"
    header = (
        '<header class="report-header">'
        f"<h1>{html.escape(title.replace('`', ''))}</h1><dl>"
        + "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in facts)
        + "</dl></header>"
    )
    report = Report()
    report.both("\n".join([f"# {title}", ""] + [f"- **{k}:** {v}" for k, v in facts] + [""]), "")
    if status_lines:
        report.md(*status_lines)
    where = Path(runs_folder)
    trained = load_runs(where) if where.is_dir() else []
    report.md("## What this profile shows", "", STORIES.get(profile, f"Profile: {note}."), "")
    for line in noise_lines(trained):
        report.md(line, "")
    report.md("## The claims", "", *claims_block(results, trained, {r.name for r in runs}))
    report.md("## Results", "")
    if trained:
        agg = aggregate(summarise(trained))
        head, rows = results_table(agg)
        report.md(to_markdown(head, rows), "", seed_caption(agg), "")
        report.md(*[f"> {line}\n" for line in mixed_starts(trained)])
    else:
        report.md("(no training runs in this profile's notebooks yet)", "")
    report.md("## Figures", "")
    interactive = figures_blocks(report, out)
    rendered = render_notebooks(out, runs) if render else {}
    rows = []
    for r in runs:
        page_link = f"[{r.name}]({rendered[r.name].name})" if r.name in rendered else r.name
        numbers = key_numbers(results.get(r.name, {})).replace("|", "/")
        rows.append(f"| {page_link} | [{r.output.name}]({r.output.name}) | {r.seconds:.0f} | {numbers} |")
    report.md(  # one block: the table's rows belong to its header
        "## Notebooks",
        "",
        "Each executed notebook rendered as a page (the .ipynb beside it opens in JupyterLab); key numbers "
        "from `results.json`.",
        "",
        "| notebook | executed copy | seconds | key numbers |",
        "|---|---|---|---|",
        *rows,
    )
    report.md("", "## Machine", "", f"- {machine_text()}", f"- {versions()}", "")
    report.md("## What is reconstructed", "", RECONSTRUCTION_NOTE, "")
    atomic_write_text(out / "report.md", report.markdown())  # a kill leaves the old report, never half
    text = page(f"rspo reproduce {profile}", header, report.html_body(), interactive)
    atomic_write_text(out / "report.html", text)
    return out / "report.md"
