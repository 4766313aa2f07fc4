"""Plotly figures shared by the notebooks and the report (docs/design.md §9).

Every function returns a ``plotly.graph_objects.Figure``; :func:`save_figure` writes it as PNG where
static export works (kaleido + Chromium) and as standalone HTML otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from rspo.rollout import Episode

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


def _per_turn(episodes: Sequence[Episode], values: Sequence[float]) -> list[list[float | None]]:
    """Flat per-turn ``values`` (episode-major, as :func:`rspo.update.build_batch` orders turns) as a
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


def advantage_heatmaps(
    episodes: Sequence[Episode], advantages: dict[str, Sequence[float]], title: str = "Advantages per turn"
) -> go.Figure:
    """One heatmap per estimator (rows: trajectories of a group, columns: turns), one shared colour scale
    centred on 0 (red: pushed down, blue: pushed up); hover shows the action."""
    names = list(advantages)
    fig = make_subplots(rows=len(names), cols=1, subplot_titles=names, vertical_spacing=0.08)
    grids = {n: _per_turn(episodes, advantages[n]) for n in names}
    peak = (
        max((abs(v) for g in grids.values() for row in g for v in row if v is not None), default=1.0) or 1.0
    )
    actions = [[t.action for t in ep.turns] + [""] * (len(grids[names[0]][0]) - len(ep)) for ep in episodes]
    for i, name in enumerate(names, 1):
        fig.add_trace(
            go.Heatmap(
                z=grids[name],
                y=_labels(episodes),
                text=actions,
                hovertemplate="turn %{x}<br>%{y}<br>%{text}<br>advantage %{z:.3f}<extra></extra>",
                colorscale="RdBu",
                zmid=0,
                zmin=-peak,
                zmax=peak,
                showscale=i == 1,
            ),
            row=i,
            col=1,
        )
        fig.update_xaxes(title_text="turn" if i == len(names) else None, row=i, col=1)
    fig.update_layout(title=title, height=220 * len(names) + 80)
    return fig


def reward_trajectory(episode: Episode, title: str | None = None) -> go.Figure:
    """Outcome vs process reward along one episode (bars per turn, cumulative lines)."""
    turns = list(range(1, len(episode) + 1))
    outcome = [t.reward for t in episode.turns]
    process = [t.process_reward for t in episode.turns]
    fig = go.Figure()
    fig.add_bar(x=turns, y=process, name="process reward", marker_color=PALETTE[0], opacity=0.6)
    fig.add_bar(x=turns, y=outcome, name="outcome reward", marker_color=PALETTE[1], opacity=0.6)
    cum_p, cum_o = [], []
    for p, o in zip(process, outcome, strict=True):
        cum_p.append((cum_p[-1] if cum_p else 0.0) + p)
        cum_o.append((cum_o[-1] if cum_o else 0.0) + o)
    fig.add_scatter(x=turns, y=cum_p, name="process, cumulative", line=dict(color=PALETTE[0]))
    fig.add_scatter(x=turns, y=cum_o, name="outcome, cumulative", line=dict(color=PALETTE[1]))
    hover = [t.action for t in episode.turns]
    for trace in fig.data:
        trace.hovertext = hover
    fig.update_layout(
        title=title or f"{episode.env} {episode.task_id}: {'won' if episode.won else 'lost'}",
        xaxis_title="turn",
        yaxis_title="reward",
        barmode="group",
    )
    return fig


def learning_curves(
    runs, key: str = "eval/success", x: str = "iteration", title: str | None = None
) -> go.Figure:
    """Mean +- std over seeds of ``key`` for each (env, algo, reward) group of
    :class:`rspo.analysis.Run` s, against ``x`` = ``"iteration"`` or ``"env_steps"``; a band where
    there are several seeds. Values in [0, 1] are shown in %."""
    import statistics

    groups: dict[str, list] = {}
    for run in runs:
        cfg = run.config
        groups.setdefault(f"{cfg.env} {cfg.algo} {cfg.reward}", []).append(run)
    fig = go.Figure()
    for i, (name, members) in enumerate(sorted(groups.items())):
        color = PALETTE[i % len(PALETTE)]
        points: dict[int, list[tuple[float, float]]] = {}
        for run in members:
            for it, steps, value in run.curve(key):
                points.setdefault(it, []).append((steps, value))
        its = sorted(points)
        xs = [statistics.fmean(s for s, _ in points[it]) if x == "env_steps" else it for it in its]
        scale = 100.0 if key.endswith("success") else 1.0
        mean = [scale * statistics.fmean(v for _, v in points[it]) for it in its]
        std = [
            scale * statistics.stdev([v for _, v in points[it]]) if len(points[it]) > 1 else 0.0 for it in its
        ]
        if any(std):
            fig.add_scatter(
                x=xs + xs[::-1],
                y=[m + s for m, s in zip(mean, std, strict=True)]
                + [m - s for m, s in zip(mean, std, strict=True)][::-1],
                fill="toself",
                fillcolor=color,
                opacity=0.15,
                line=dict(width=0),
                hoverinfo="skip",
                showlegend=False,
            )
        fig.add_scatter(
            x=xs, y=mean, name=f"{name} ({len(members)} seeds)", line=dict(color=color), mode="lines+markers"
        )
    fig.update_layout(
        title=title or key,
        xaxis_title="environment steps" if x == "env_steps" else "iteration",
        yaxis_title=f"{key} (%)" if key.endswith("success") else key,
    )
    return fig


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
