"""Plotly figures (and the tables) shown by the notebooks and the report (docs/design.md §9).

Every figure function returns a ``plotly.graph_objects.Figure``; :func:`save_figure` writes it as PNG
where static export works (kaleido + Chromium) and as standalone HTML otherwise. The conventions all
figures follow, so that a student can read them:

- every axis has a title; iteration axes tick at whole iterations;
- turns are counted from 1 (turn 1 is the first action of an episode), in every figure and printout;
- rewards are in the unit the figure's axis names: the environment's (a success pays 1.0) or the
  trainer's (``RewardSpec.outcome_scale`` x the environment's: a success pays 10);
- a colour scale centred on 0 is symmetric and per panel, and stays fixed while sliders move
  (:func:`knob_heatmaps`);
- curves that coincide exactly are drawn once, with one legend entry naming all of them; the others
  differ in colour, dash and marker, so a curve hidden under another is still seen;
- a mean over seeds says how many seeds it is over ("(2 seeds)", "(1 seed)");
- RSPO's learner and explorer have a colour each (:data:`LEARNER_COLOR`, :data:`EXPLORER_COLOR`).
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from rspo.core.rollout import Episode

# tab10: ten distinct colours, one per algo x reward mode series (9) without repeats
PALETTE = [
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
    "#bcbd22",
]
DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
SYMBOLS = ["circle", "square", "diamond", "triangle-up", "x", "cross", "star", "triangle-down", "hexagon"]
LEARNER_COLOR = PALETTE[0]  # blue: the policy that is trained on the outcome reward and evaluated
EXPLORER_COLOR = PALETTE[4]  # orange: RSPO's explorer, trained on the dense reward
WON_COLOR, LOST_COLOR = PALETTE[2], PALETTE[1]

# axis titles of the metrics the notebooks plot (a metric not named here is titled by its key)
METRIC_TITLES = {
    "eval/success": "greedy test success (%)",
    "rollout/success": "rollout success (%)",
    "explorer/success": "explorer rollout success (%)",
    "rollout/process_return": "process return per episode",
    "rollout/distinct_successes": "distinct successful trajectories",
    "rollout/invalid_frac": "invalid actions (share of turns)",
}


def seeds_label(n: int) -> str:
    """``"1 seed"``, ``"2 seeds"``."""
    return f"{n} seed" if n == 1 else f"{n} seeds"


def _nice_step(span: float, most: int = 10) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50, ... that puts at most ``most`` ticks on ``span``."""
    step = 1
    while span / step > most:
        for factor in (2, 2.5, 2):  # 1 -> 2 -> 5 -> 10 -> 20 -> 50 ...
            step = int(step * factor)
            if span / step <= most:
                break
    return step


def integer_axis(
    fig: go.Figure, last: float, axis: str = "x", first: int = 0, most: int = 10, **where
) -> None:
    """Ticks at whole numbers only (iterations, turns): ``first``, ``first`` + 1, ... or every 2nd,
    5th, 10th, ... so that at most ``most`` ticks are drawn up to ``last``."""
    update = fig.update_xaxes if axis == "x" else fig.update_yaxes
    update(tickmode="linear", tick0=first, dtick=_nice_step(max(last, 1), most), tickformat="d", **where)


# --- advantages per turn (notebook 02) -------------------------------------------------------------
def _per_turn(episodes: Sequence[Episode], values: Sequence[float]) -> list[list[float | None]]:
    """Flat per-turn ``values`` (episode-major, as :func:`rspo.core.update.build_batch` orders turns) as a
    trajectories x turns grid padded with None."""
    width = max((len(ep) for ep in episodes), default=0)
    grid, k = [], 0
    for ep in episodes:
        row = [float(v) for v in values[k : k + len(ep)]]
        grid.append(row + [None] * (width - len(ep)))
        k += len(ep)
    if k != len(values):
        raise ValueError(f"{len(values)} values for {k} turns")
    return grid


def _labels(episodes: Sequence[Episode]) -> list[str]:
    return [f"copy {ep.copy}: {'won' if ep.won else 'lost'}, {len(ep)} turns" for ep in episodes]


def _peak(values: Iterable[float | None]) -> float:
    """The largest |value| (1.0 when all are 0 or there are none): the half-width of a symmetric scale."""
    return max((abs(v) for v in values if v is not None), default=0.0) or 1.0


def advantage_heatmaps(
    episodes: Sequence[Episode],
    advantages: Mapping[str, Sequence[float]],
    title: str = "Advantages per turn",
    zmax: Mapping[str, float] | None = None,
) -> go.Figure:
    """One heatmap per estimator (rows: the trajectories of a group, columns: turns from 1), each with
    its own colour scale, symmetric about 0 (red: pushed down, blue: pushed up) and with its own
    colour bar beside it: an estimator whose advantages are small is not washed out by one whose
    advantages are large. ``zmax`` fixes a panel's scale to ±``zmax[name]`` (see
    :func:`knob_heatmaps`); by default it is the panel's largest |A|. Hover shows the action."""
    names = list(advantages)
    panel, gap, top, bottom = 200, 100, 90, 60  # px: room between panels for tick labels, x title, title
    area = len(names) * panel + (len(names) - 1) * gap
    fig = make_subplots(
        rows=len(names), cols=1, subplot_titles=names, vertical_spacing=gap / area if len(names) > 1 else 0
    )
    grids = {n: _per_turn(episodes, advantages[n]) for n in names}
    width = len(grids[names[0]][0]) if episodes else 0
    turns = list(range(1, width + 1))
    actions = [[t.action for t in ep.turns] + [""] * (width - len(ep)) for ep in episodes]
    for i, name in enumerate(names, 1):
        peak = float(zmax[name]) if zmax and name in zmax else _peak(v for row in grids[name] for v in row)
        domain = fig.layout["yaxis" if i == 1 else f"yaxis{i}"].domain
        fig.add_trace(
            go.Heatmap(
                z=grids[name],
                x=turns,
                y=_labels(episodes),
                text=actions,
                hovertemplate="turn %{x}<br>%{y}<br>%{text}<br>advantage %{z:.3f}<extra></extra>",
                colorscale="RdBu",
                zmid=0,
                zmin=-peak,
                zmax=peak,
                colorbar=dict(
                    title=dict(text="A", side="right"),
                    y=(domain[0] + domain[1]) / 2,
                    len=domain[1] - domain[0],
                    yanchor="middle",
                    thickness=14,
                ),
            ),
            row=i,
            col=1,
        )
        fig.update_xaxes(title_text="turn (from 1)", row=i, col=1)
        fig.update_yaxes(title_text="trajectory", row=i, col=1)
        integer_axis(fig, width, first=1, most=20, row=i, col=1)  # every turn up to 20 turns
    fig.update_layout(title=title, height=area + top + bottom, margin=dict(t=top, b=bottom))
    return fig


def advantage_ranges(
    advantages_fn: Callable[[float, float, str], Mapping[str, Sequence[float]]],
    settings: Iterable[tuple[float, float, str]],
) -> dict[tuple[str, str], float]:
    """The largest |A| of every panel of ``advantages_fn(gamma, omega, adv_norm)`` over ``settings``,
    per normalisation: ``{(adv_norm, panel name): peak}``."""
    peaks: dict[tuple[str, str], float] = {}
    for gamma, omega, norm in settings:
        for name, values in advantages_fn(gamma, omega, norm).items():
            key = (norm, name)
            peaks[key] = max(peaks.get(key, 0.0), _peak(values) if any(values) else 0.0)
    return {k: v or 1.0 for k, v in peaks.items()}


def knob_heatmaps(
    episodes: Sequence[Episode],
    advantages_fn: Callable[[float, float, str], Mapping[str, Sequence[float]]],
    settings: Iterable[tuple[float, float, str]],
    title: str = "Advantages per turn",
) -> Callable[[float, float, str], go.Figure]:
    """A ``figure_fn(gamma, omega, adv_norm)`` for :func:`rspo.notebook.widgets.advantage_knobs` whose colour
    scales do not move with the sliders: each panel's range is the largest |A| it takes over
    ``settings`` (every slider position: :func:`rspo.notebook.widgets.knob_settings`), one range per
    normalisation (``adv_norm="none"`` is in reward units, ``"std"`` in standard deviations)."""
    ranges = advantage_ranges(advantages_fn, settings)

    def figure(gamma: float, omega: float, adv_norm: str) -> go.Figure:
        adv = advantages_fn(gamma, omega, adv_norm)
        # a setting off the grid could exceed the grid's largest |A|: widen rather than clip (never on the grid)
        zmax = {n: max([ranges.get((adv_norm, n), 1.0), *(abs(x) for x in v)]) for n, v in adv.items()}
        label = f"{title}: γ = {gamma:.2f}, ω = {omega:.2f}, adv_norm = {adv_norm} (colour ranges fixed)"
        return advantage_heatmaps(episodes, adv, title=label, zmax=zmax)

    figure.ranges = ranges
    return figure


# --- rewards along an episode (notebook 01) ---------------------------------------------------------
def reward_trajectory(episode: Episode, title: str | None = None) -> go.Figure:
    """Outcome vs process reward along one episode (bars per turn, cumulative lines), in the
    environment's units (a success pays 1.0); turns from 1."""
    turns = list(range(1, len(episode) + 1))
    outcome = [t.outcome_reward for t in episode.turns]
    process = [t.process_reward for t in episode.turns]
    fig = go.Figure()
    fig.add_bar(x=turns, y=process, name="process reward", marker_color=PALETTE[0], opacity=0.6)
    fig.add_bar(x=turns, y=outcome, name="outcome reward", marker_color=PALETTE[1], opacity=0.6)
    cum_p, cum_o = [], []
    for p, o in zip(process, outcome, strict=True):
        cum_p.append((cum_p[-1] if cum_p else 0.0) + p)
        cum_o.append((cum_o[-1] if cum_o else 0.0) + o)
    fig.add_scatter(x=turns, y=cum_p, name="process, cumulative", line=dict(color=PALETTE[0]))
    fig.add_scatter(x=turns, y=cum_o, name="outcome, cumulative", line=dict(color=PALETTE[1], dash="dash"))
    hover = [t.action for t in episode.turns]
    for trace in fig.data:
        trace.hovertext = hover
    fig.update_layout(
        title=title or f"{episode.env} {episode.task_id}: {'won' if episode.won else 'lost'}",
        xaxis_title="turn (from 1)",
        yaxis_title="reward (environment units: a success pays 1.0)",
        barmode="group",
    )
    integer_axis(fig, len(turns), first=1, most=20)
    return fig


def process_return_by_outcome(
    study: Mapping[str, tuple[Sequence[float], Sequence[bool]]], misalignment: float
) -> go.Figure:
    """Per environment (a panel each), the process return of the won and of the lost episodes, every
    episode a point (``study``: env name -> (process returns, won flags), one entry per episode)."""
    names = list(study)
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=names, horizontal_spacing=0.15)
    for col, name in enumerate(names, 1):
        process, won = study[name]
        for flag, color, label in [(True, WON_COLOR, "won"), (False, LOST_COLOR, "lost")]:
            xs = [p for p, w in zip(process, won, strict=True) if w == flag]
            fig.add_trace(
                go.Box(
                    x=xs,
                    name=f"{label} ({len(xs)})",
                    marker_color=color,
                    boxpoints="all",
                    jitter=0.4,
                    hovertemplate="process return %{x:.2f}<extra></extra>",
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="process return (environment units)", row=1, col=col)
        fig.update_yaxes(title_text="episode outcome (how many)", row=1, col=col)
    fig.update_layout(
        title=f"process return of won and lost episodes (m = {misalignment:g})", showlegend=False
    )
    return fig


# --- learning curves (notebooks 03-05) --------------------------------------------------------------
def _series_label(members: list[tuple[str, int]]) -> str:
    """``"a (2 seeds)"``; curves drawn once because they coincide: ``"a = b (2 seeds each)"``."""
    counts = {n for _, n in members}
    if len(members) == 1:
        return f"{members[0][0]} ({seeds_label(members[0][1])})"
    if len(counts) == 1:
        n = counts.pop()
        return " = ".join(name for name, _ in members) + f" ({seeds_label(n)}{' each' if n > 1 else ''})"
    return " = ".join(f"{name} ({seeds_label(n)})" for name, n in members)


def _merge_identical(series: list[dict]) -> list[dict]:
    """Series whose points are identical (to 1e-9) become one, their names listed in ``members``."""
    merged: dict[tuple, dict] = {}
    for s in series:
        key = tuple(tuple(round(v, 9) for v in s[part]) for part in ("x", "mean", "std"))
        if key in merged:
            merged[key]["members"].append((s["name"], s["seeds"]))
        else:
            merged[key] = {**s, "members": [(s["name"], s["seeds"])]}
    return list(merged.values())


def learning_curves(
    runs,
    key: str = "eval/success",
    x: str = "iteration",
    title: str | None = None,
    group=None,
    every_seed: bool = False,
) -> go.Figure:
    """Mean ± 1 std over seeds of ``key`` for each (env, algo, reward) group of
    :class:`rspo.study.analysis.Run` s (or each ``group(run)``: a name), against ``x`` = ``"iteration"`` or
    ``"env_steps"``; a band where there are several seeds. Values of a ``*success`` key are shown in %.
    Each legend entry says over how many seeds its curve is; groups with identical curves share one
    line and one entry. ``every_seed``: each run's own curve as a thin line in its group's colour
    (no band then)."""
    groups: dict[str, list] = {}
    for run in runs:
        cfg = run.config
        name = group(run) if group else f"{cfg.env} {cfg.algo} {cfg.reward}"
        groups.setdefault(name, []).append(run)
    scale = 100.0 if key.endswith("success") else 1.0
    series = []
    for name, members in sorted(groups.items()):
        points: dict[int, list[tuple[float, float]]] = {}
        for run in members:
            for it, steps, value in run.curve(key):
                points.setdefault(it, []).append((steps, value))
        its = sorted(points)
        xs = [statistics.fmean(s for s, _ in points[it]) if x == "env_steps" else it for it in its]
        mean = [scale * statistics.fmean(v for _, v in points[it]) for it in its]
        std = [
            scale * statistics.stdev([v for _, v in points[it]]) if len(points[it]) > 1 else 0.0 for it in its
        ]
        series.append(dict(name=name, seeds=len(members), x=xs, mean=mean, std=std))
    fig = go.Figure()
    for i, s in enumerate(_merge_identical(series)):
        color, label = PALETTE[i % len(PALETTE)], _series_label(s["members"])
        xs, mean, std = s["x"], s["mean"], s["std"]
        for run in [r for name, _ in s["members"] for r in groups[name]] if every_seed else []:
            curve = run.curve(key)
            fig.add_scatter(
                x=[steps if x == "env_steps" else it for it, steps, _ in curve],
                y=[scale * v for _, _, v in curve],
                mode="lines",
                line=dict(color=color, width=1),
                opacity=0.35,
                hovertext=f"seed {run.config.seed}",
                name=f"{label}: seed {run.config.seed}",
                legendgroup=label,
                showlegend=False,
            )
        if any(std) and not every_seed:
            fig.add_scatter(
                x=xs + xs[::-1],
                y=[m + d for m, d in zip(mean, std, strict=True)]
                + [m - d for m, d in zip(mean, std, strict=True)][::-1],
                fill="toself",
                fillcolor=color,
                opacity=0.15,
                mode="lines",
                line=dict(width=0),
                hoverinfo="skip",
                name=f"± 1 std over {seeds_label(s['seeds'])}",
                legendgroup=label,
                showlegend=False,
            )
        fig.add_scatter(
            x=xs,
            y=mean,
            name=label,
            legendgroup=label,
            mode="lines+markers",
            line=dict(color=color, dash=DASHES[i % len(DASHES)]),
            marker=dict(symbol=SYMBOLS[i % len(SYMBOLS)], size=7),
        )
    fig.update_layout(
        title=title or key,
        xaxis_title="environment steps" if x == "env_steps" else "iteration",
        yaxis_title=METRIC_TITLES.get(key, f"{key} (%)" if key.endswith("success") else key),
        # a band is drawn only over several seeds: one seed's curve is its values, not a mean
        legend_title_text=(
            "mean over seeds, thin lines each seed"
            if every_seed
            else "mean over seeds, band ± 1 std"
            if any(any(s["std"]) for s in series)
            else ""
        ),
        showlegend=True,  # also for a single line: its entry names the curves it stands for
    )
    if key.endswith("success"):
        fig.update_yaxes(range=[-3, 103])  # the whole scale: 0% reads as 0%, not as the middle of [-1, 1]
    elif key.endswith("_frac"):
        fig.update_yaxes(range=[-0.03, 1.03])  # a share: its whole scale, 0 to 1
    if x == "iteration":
        integer_axis(fig, max((v for s in series for v in s["x"]), default=1))
    else:
        fig.update_xaxes(tickformat=",d")
    return fig


# --- RSPO's learner, explorer and buffer (notebook 04) -----------------------------------------------
def learner_vs_explorer(runs) -> go.Figure:
    """Rollout success per iteration of each RSPO run's learner (blue, solid) and explorer (orange,
    dashed); one marker shape per run."""
    fig = go.Figure()
    last = 1
    for i, run in enumerate(runs):
        rows = run.rows[1:]
        its = [r["iteration"] for r in rows]
        last = max([last, *its])
        name, symbol = f"{run.config.env} {run.config.algo}", SYMBOLS[i % len(SYMBOLS)]
        for who, key, color, dash in (
            ("learner", "rollout/success", LEARNER_COLOR, "solid"),
            ("explorer", "explorer/success", EXPLORER_COLOR, "dash"),
        ):
            fig.add_scatter(
                x=its,
                y=[100 * r[key] for r in rows],
                name=f"{name} {who}",
                mode="lines+markers",
                line=dict(color=color, dash=dash),
                marker=dict(symbol=symbol, size=7),
            )
    fig.update_layout(
        title="RSPO: learner and explorer rollout success",
        xaxis_title="iteration",
        yaxis_title="rollout success (%)",
        yaxis_range=[-3, 103],
    )
    integer_axis(fig, last)
    return fig


BUFFER_KEYS = [
    ("buffer/age_mean", "age of the replayed groups", "buffer age (iterations)"),
    ("swap/is_ratio_mean", "learner vs explorer", "mean π_A_old / π_B (before truncation)"),
    ("swap/truncated_frac", "how often c bites", "fraction of tokens truncated"),
]


def buffer_statistics(runs) -> go.Figure:
    """Per iteration of each RSPO run: the replay buffer's mean age, the mean importance ratio before
    truncation and the fraction truncated (``swap/*`` is undefined, a gap, where no replayed turn was
    trained on)."""
    fig = make_subplots(rows=1, cols=3, subplot_titles=[t for _, t, _ in BUFFER_KEYS], horizontal_spacing=0.1)
    last = 1
    for i, run in enumerate(runs):
        rows = run.rows[1:]
        its = [r["iteration"] for r in rows]
        last = max([last, *its])
        for col, (key, _, _) in enumerate(BUFFER_KEYS, 1):
            fig.add_scatter(
                x=its,
                y=[r[key] if r.get("swap/turns") or not key.startswith("swap/") else None for r in rows],
                row=1,
                col=col,
                name=f"{run.config.env} {run.config.algo}",
                legendgroup=f"run{i}",
                showlegend=col == 1,
                mode="lines+markers",
                line=dict(color=PALETTE[i % len(PALETTE)], dash=DASHES[i % len(DASHES)]),
                marker=dict(symbol=SYMBOLS[i % len(SYMBOLS)]),
            )
    for col, (_, _, axis_title) in enumerate(BUFFER_KEYS, 1):
        fig.update_xaxes(title_text="iteration", row=1, col=col)
        fig.update_yaxes(title_text=axis_title, rangemode="tozero", row=1, col=col)
        integer_axis(fig, last, row=1, col=col)
        traces = [t for t in fig.data if (t.xaxis or "x") == ("x" if col == 1 else f"x{col}")]
        if all(v is None for t in traces for v in t.y):
            fig.add_annotation(
                text="undefined: no replayed<br>turn was trained on",
                xref=f"x{'' if col == 1 else col} domain",
                yref=f"y{'' if col == 1 else col} domain",
                x=0.5,
                y=0.5,
                showarrow=False,
            )
    fig.update_yaxes(range=[-0.03, 1.03], row=1, col=3)  # a fraction
    fig.update_layout(title="RSPO replay buffer and importance weights")
    return fig


def importance_weights(weights: Sequence[float], c: float) -> go.Figure:
    """Histogram of the truncated importance weights w = min(π_A_old / π_B, c) of replayed tokens, on
    the whole range [0, c] (so that "all near 1" reads as such), with c marked."""
    size = c / 40
    fig = go.Figure(
        go.Histogram(
            x=list(weights),
            xbins=dict(start=0.0, end=c + size, size=size),
            marker_color=EXPLORER_COLOR,
            name="replayed tokens",
        )
    )
    fig.add_vline(x=c, line=dict(color="#7f7f7f", dash="dash"), annotation_text=f"truncation c = {c:g}")
    if not len(weights):
        fig.add_annotation(
            text="no replayed explorer token in this iteration",
            x=c / 2,
            y=0.5,
            yref="paper",
            showarrow=False,
        )
    fig.update_layout(
        title=f"truncated importance weights of the replayed explorer turns ({len(weights)} tokens)",
        xaxis_title="w = min(π_A_old / π_B, c)",
        yaxis_title="replayed tokens",
        bargap=0.05,
    )
    fig.update_xaxes(range=[0, c + 2 * size], tickformat=".2f")
    fig.update_yaxes(rangemode="tozero")
    return fig


# --- behaviour coverage (notebook 05) ---------------------------------------------------------------
def coverage(runs) -> list[dict]:
    """Distinct successful trajectories found by each run's learner and (RSPO) explorer: one dict per
    policy, ``{"run", "role", "found", "per_1000"}`` (``per_1000``: per 1,000 of the run's
    environment steps)."""
    from rspo.study.analysis import method_name

    out = []
    for run in runs:
        last = run.rows[-1]
        label = f"{run.config.env} {run.config.algo} {method_name(run.config)}"
        for role, key in (
            ("learner", "rollout/distinct_successes"),
            ("explorer", "explorer/distinct_successes"),
        ):
            if key in last:
                found = last[key]
                per_1000 = 1000 * found / max(last["rollout/env_steps"], 1)
                out.append(dict(run=label, role=role, found=found, per_1000=per_1000))
    return out


def behaviour_coverage(rows: Sequence[dict], title: str | None = None) -> go.Figure:
    """Bars of :func:`coverage`'s rows per 1,000 environment steps: the learner (the trained policy;
    blue) and RSPO's explorer (orange) side by side, each bar labelled with its height (the rate); the
    counts and steps behind it are in its hover text."""
    fig = go.Figure()
    for role, color, name in (
        ("learner", LEARNER_COLOR, "learner (the trained policy)"),
        ("explorer", EXPLORER_COLOR, "explorer (RSPO)"),
    ):
        mine = [r for r in rows if r["role"] == role]
        if mine:
            fig.add_bar(
                x=[r["run"] for r in mine],
                y=[r["per_1000"] for r in mine],
                text=[f"{r['per_1000']:.2f}" for r in mine],
                textposition="outside",
                name=name,
                marker_color=color,
                customdata=[r["found"] for r in mine],
                hovertemplate="%{x}<br>%{customdata:g} distinct successes: %{y:.2f} per 1,000 steps<extra>"
                + role
                + "</extra>",
            )
    fig.update_layout(
        title=title or "distinct successful trajectories per 1,000 environment steps",
        xaxis_title="run (env, algo, reward)",
        yaxis_title="distinct successes per 1,000 steps",
        yaxis_rangemode="tozero",
        barmode="group",
    )
    return fig


# --- tables -------------------------------------------------------------------------------------------
class Table:
    """A table a notebook shows: HTML in JupyterLab (and in nbconvert's HTML), aligned plain text
    where only text is shown. Build it with :func:`table`; ``markdown()`` gives the pipes."""

    def __init__(self, head: Sequence[str], rows: Sequence[Sequence], caption: str = ""):
        self.head = [str(h) for h in head]
        self.rows = [["" if v is None else str(v) for v in row] for row in rows]
        self.caption = caption

    def _repr_html_(self) -> str:
        cap = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.head)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>" for row in self.rows
        )
        return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def __repr__(self) -> str:
        cols = [self.head, *self.rows]
        widths = [max(len(r[k]) for r in cols if k < len(r)) for k in range(len(self.head))]
        lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=False)).rstrip() for r in cols]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(([self.caption] if self.caption else []) + lines)

    def markdown(self) -> str:
        from rspo.study.analysis import to_markdown

        return to_markdown(self.head, self.rows)


def table(head: Sequence[str], rows: Sequence[Sequence], caption: str = "") -> Table:
    """``head`` and ``rows`` (as :func:`rspo.study.analysis.results_table` returns them) as a :class:`Table`:
    the last expression of a cell, or ``IPython.display.display(table(...))``."""
    return Table(head, rows, caption)


def save_figure(fig: go.Figure, path: str | Path) -> Path:
    """Write ``fig`` as ``<path>.png`` if static export works here, else as ``<path>.html``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        out = path.with_suffix(".png")
        fig.write_image(out)
        return out
    except Exception:  # no kaleido or no Chromium: standalone HTML (plotly.js embedded)
        out = path.with_suffix(".html")
        fig.write_html(out, include_plotlyjs=True)
        return out
