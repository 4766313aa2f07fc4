"""The shared plotly figures: shapes, the per-turn layout, and the PNG-or-HTML export."""

from __future__ import annotations

import pytest

from rspo.core.policies.scripted import EpsilonExpert
from rspo.core.rollout import collect, make_envs
from rspo.notebook import plots


@pytest.fixture(scope="module")
def group():
    envs = make_envs("household", "valid_seen", 4, max_steps=10)
    return collect(EpsilonExpert(0.5, 1), envs, [envs[0].task_ids[0]], 4)


def test_epsilon_expert_mixes_moves_and_zero_epsilon_is_the_expert(group):
    assert len({len(ep) for ep in group}) > 1 or len({ep.won for ep in group}) > 1
    envs = make_envs("household", "valid_seen", 2)
    experts = collect(EpsilonExpert(0.0), envs, [envs[0].task_ids[0]], 2)
    assert all(ep.won for ep in experts) and all(t.token_logprobs == [0.0] for t in experts[0].turns)
    with pytest.raises(ValueError, match="epsilon"):
        EpsilonExpert(1.5)


def test_advantage_heatmaps_lay_turns_out_per_trajectory(group):
    n = sum(len(ep) for ep in group)
    fig = plots.advantage_heatmaps(group, {"a": list(range(n)), "b": [0.0] * n})
    assert len(fig.data) == 2
    z = fig.data[0].z
    assert len(z) == len(group) and len(z[0]) == max(len(ep) for ep in group)
    assert z[1][0] == len(group[0])  # the second trajectory starts after the first one's turns
    with pytest.raises(ValueError, match="values for"):
        plots.advantage_heatmaps(group, {"a": [0.0]})


def test_reward_trajectory_and_save_figure(group, tmp_path):
    fig = plots.reward_trajectory(group[0])
    assert len(fig.data) == 4 and list(fig.data[0].x) == list(range(1, len(group[0]) + 1))
    out = plots.save_figure(fig, tmp_path / "fig")
    assert out.exists() and out.suffix in (".png", ".html") and out.stat().st_size > 1000


def test_nine_learning_curves_get_nine_colours():
    from rspo.notebook.plots import PALETTE

    assert len(set(PALETTE[:9])) == 9  # 3 algos x 3 reward modes in one figure, no colour repeated


# --- what a student can read: the properties every figure keeps -------------------------------------
def _axis_titles(fig) -> dict[str, str]:
    """Title text of every axis a trace is drawn on, e.g. {"xaxis": "turn (from 1)", "yaxis2": ""}."""
    names = set()
    for trace in fig.data:
        for ref in (getattr(trace, "xaxis", None) or "x", getattr(trace, "yaxis", None) or "y"):
            names.add(f"{ref[0]}axis{ref[1:]}")
    return {n: fig.layout[n].title.text or "" for n in sorted(names)}


def _every_axis_titled(fig) -> None:
    titles = _axis_titles(fig)
    assert titles and all(titles.values()), f"untitled axes: {titles}"


def _integer_ticks(axis) -> bool:
    return (
        axis.tickformat == "d"
        and axis.tickmode == "linear"
        and isinstance(axis.dtick, int)
        and axis.dtick >= 1
    )


def fake_run(reward="outcome", seed=0, env="detour", algo="grpo", success=(0.0, 0.1, 0.3), **extra):
    from pathlib import Path

    from rspo.core.config import TrainConfig
    from rspo.study.analysis import Run

    cfg = TrainConfig(env=env, algo=algo, reward=reward, seed=seed, iterations=len(success) - 1)
    rows = []
    for it, s in enumerate(success):
        row = {"iteration": it, "eval/success": s}
        if it:
            row.update(
                {"rollout/success": s, "rollout/env_steps": 100 * it, "rollout/distinct_successes": it}
            )
            if reward == "rspo":
                row.update(
                    {
                        "rollout/env_steps": 200 * it,
                        "explorer/success": s / 2,
                        "explorer/distinct_successes": 2 * it,
                        "buffer/age_mean": it / 2,
                        "swap/turns": 0 if it == 1 else 10,
                        "swap/is_ratio_mean": 1.0,
                        "swap/truncated_frac": 0.1,
                    }
                )
            row.update(extra)
        rows.append(row)
    return Run(Path("."), cfg, rows)


def test_advantage_heatmaps_per_panel_symmetric_scales_turns_from_1_and_room_for_titles(group):
    n = sum(len(ep) for ep in group)
    small, large = [0.01 * ((-1) ** k) * k for k in range(n)], [10.0 * k for k in range(n)]
    for names in (["GRPO", "GiGPO"], ["GRPO", "RLOO", "turn-level", "GiGPO", "GAE"]):
        adv = {name: small if k % 2 == 0 else large for k, name in enumerate(names)}
        fig = plots.advantage_heatmaps(group, adv)
        _every_axis_titled(fig)
        for trace, name in zip(fig.data, names, strict=True):
            peak = max(abs(v) for v in adv[name])
            assert trace.zmin == -trace.zmax == -peak  # symmetric, this panel's own range
            assert list(trace.x)[0] == 1 and trace.showscale is not False  # turns from 1, a colour bar each
        assert fig.data[0].zmax < 1 < fig.data[1].zmax  # GRPO is not washed out by a larger neighbour
        assert all(_integer_ticks(fig.layout[a]) for a in _axis_titles(fig) if a.startswith("x"))
        # no subplot title sits on the tick labels or the x title of the panel above: >= 80 px between
        plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
        domains = [fig.layout["yaxis" if i == 1 else f"yaxis{i}"].domain for i in range(1, len(names) + 1)]
        for above, below in zip(domains, domains[1:], strict=False):
            assert (above[0] - below[1]) * plot_px >= 80
        bars = [t.colorbar for t in fig.data]
        assert len({round(b.y, 6) for b in bars}) == len(names)  # each colour bar beside its own panel
    fixed = plots.advantage_heatmaps(group, {"a": small}, zmax={"a": 5.0})
    assert (fixed.data[0].zmin, fixed.data[0].zmax) == (-5.0, 5.0)


def test_knob_heatmaps_hold_each_panels_range_fixed_while_the_sliders_move(group):
    from rspo.core.config import TrainConfig
    from rspo.core.rewards import RewardSpec, compute_rewards
    from rspo.core.update import build_batch
    from rspo.notebook import widgets

    rewards = compute_rewards("outcome", group, RewardSpec())

    def advantages(gamma, omega, adv_norm):
        out = {}
        for algo, name in (("grpo", "GRPO"), ("gigpo", "GiGPO")):
            cfg = TrainConfig(env="household", algo=algo, gamma=gamma, omega=omega, adv_norm=adv_norm)
            out[name] = build_batch(group, rewards, cfg).adv.tolist()
        return out

    figure_fn = plots.knob_heatmaps(group, advantages, widgets.knob_settings(), title="knobs")
    seen = {}
    for gamma, omega, norm in [(0.95, 1.0, "std"), (0.6, 1.0, "std"), (0.5, 2.0, "std"), (1.0, 0.0, "std"),
                               (0.95, 1.0, "none"), (0.7, 0.25, "none")]:  # fmt: skip
        fig = figure_fn(gamma, omega, norm)
        _every_axis_titled(fig)
        assert [a.text for a in fig.layout.annotations[:2]] == ["GRPO", "GiGPO"]  # panel titles stay put
        ranges = tuple((t.zmin, t.zmax) for t in fig.data)
        assert all(lo == -hi > -1e9 for lo, hi in ranges)
        for t in fig.data:  # the fixed range holds every value of this setting
            assert max(abs(v) for row in t.z for v in row if v is not None) <= t.zmax + 1e-9
        seen.setdefault(norm, set()).add(ranges)
    assert all(len(r) == 1 for r in seen.values()), seen  # slider moves leave the colour ranges alone
    assert seen["std"] != seen["none"]  # per normalisation: "none" is in reward units


def test_learning_curves_integer_iterations_seed_counts_and_coinciding_curves_made_visible():
    runs = [fake_run("outcome", s) for s in (0, 1)] + [fake_run("dense", s) for s in (0, 1)]
    runs += [fake_run("rspo", 0, success=(0.0, 0.2, 0.6))]
    fig = plots.learning_curves(runs, key="eval/success", x="iteration")
    _every_axis_titled(fig)
    assert _integer_ticks(fig.layout.xaxis)
    lines = [t for t in fig.data if t.fill != "toself"]
    names = [t.name for t in lines]
    # outcome and dense coincide: one line, one legend entry naming both; RSPO: its own, "(1 seed)"
    assert names == ["detour grpo dense = detour grpo outcome (2 seeds each)", "detour grpo rspo (1 seed)"]
    assert not any("1 seeds" in t.name for t in fig.data)
    assert fig.layout.showlegend and fig.layout.yaxis.range == (-3, 103)  # a lone merged line keeps its entry
    assert len({(t.line.color, t.line.dash, t.marker.symbol) for t in lines}) == len(lines)
    # distinct curves: one entry each, with the seed count; a band (grouped with its line) per 2+ seeds
    runs[2] = fake_run("dense", 0, success=(0.0, 0.5, 0.5))
    fig = plots.learning_curves(runs, key="rollout/success", x="env_steps")
    lines = [t for t in fig.data if t.fill != "toself"]
    bands = [t for t in fig.data if t.fill == "toself"]
    assert [t.name for t in lines] == [
        "detour grpo dense (2 seeds)",
        "detour grpo outcome (2 seeds)",
        "detour grpo rspo (1 seed)",
    ]
    assert len(bands) == 1 and bands[0].legendgroup == lines[0].legendgroup and "2 seeds" in bands[0].name
    assert len({(t.line.dash, t.marker.symbol) for t in lines}) == 3  # told apart where they overlap
    assert fig.layout.yaxis.title.text == "rollout success (%)"
    _every_axis_titled(fig)
    many = [fake_run("outcome", 0, success=tuple(0.01 * k for k in range(31)))]
    axis = plots.learning_curves(many, x="iteration").layout.xaxis
    assert _integer_ticks(axis) and 30 / axis.dtick <= 10


def test_rspo_figures_learner_and_explorer_apart_integer_iterations_every_axis_titled():
    runs = [fake_run("rspo", 0), fake_run("rspo", 0, algo="gigpo", success=(0.0, 0.4, 0.5))]
    fig = plots.learner_vs_explorer(runs)
    _every_axis_titled(fig)
    assert _integer_ticks(fig.layout.xaxis)
    learner = [t for t in fig.data if t.name.endswith("learner")]
    explorer = [t for t in fig.data if t.name.endswith("explorer")]
    assert len(learner) == len(explorer) == 2
    assert {t.line.color for t in learner}.isdisjoint({t.line.color for t in explorer})
    assert len({t.marker.symbol for t in learner}) == 2  # the two runs told apart
    fig = plots.buffer_statistics(runs)
    _every_axis_titled(fig)
    axes = _axis_titles(fig)
    assert len(axes) == 6 and all(_integer_ticks(fig.layout[a]) for a in axes if a.startswith("x"))
    assert [t.name for t in fig.data if t.showlegend] == ["detour grpo", "detour gigpo"]
    ratio = next(t for t in fig.data if t.xaxis == "x2")
    assert ratio.y[0] is None and ratio.y[1] == 1.0  # undefined where no replayed turn was trained on
    never = plots.buffer_statistics([fake_run("rspo", 0, success=(0.0, 0.1))])  # swap/turns 0 throughout
    assert sum("undefined" in a.text for a in never.layout.annotations) == 2  # said, not an empty panel


def test_importance_weights_on_the_whole_range_and_an_empty_iteration_said():
    fig = plots.importance_weights([0.9999982, 1.0, 0.99999], c=1.0)
    _every_axis_titled(fig)
    assert fig.layout.xaxis.range[0] == 0 and fig.layout.xaxis.range[1] > 1.0
    assert fig.layout.xaxis.tickformat == ".2f" and fig.data[0].xbins.start == 0
    empty = plots.importance_weights([], c=2.0)
    assert any("no replayed" in a.text for a in empty.layout.annotations)


def test_behaviour_coverage_learner_and_explorer_in_two_colours():
    runs = [fake_run("outcome"), fake_run("rspo")]
    rows = plots.coverage(runs)
    assert [(r["run"], r["role"], r["found"]) for r in rows] == [
        ("detour grpo outcome", "learner", 2),
        ("detour grpo rspo", "learner", 2),
        ("detour grpo rspo", "explorer", 4),
    ]
    assert rows[0]["per_1000"] == pytest.approx(1000 * 2 / 200)
    fig = plots.behaviour_coverage(rows)
    _every_axis_titled(fig)
    assert len(fig.data) == 2 and fig.data[0].marker.color != fig.data[1].marker.color
    assert [t.name.split()[0] for t in fig.data] == ["learner", "explorer"]
    # a bar's label is its height (the rate), never the count beside a rate axis; the count is in the hover
    assert list(fig.data[0].text) == ["10.00", "5.00"] and list(fig.data[0].customdata) == [2, 2]


def test_the_paper_table_shows_a_score_only_where_it_is_more_than_success():
    """The shop's WebShop score is a column of its own; detour's and household's score is their success
    and would repeat it."""
    from rspo.study.analysis import paper_table

    run = fake_run("outcome")
    run.rows[-1].update({"eval/test/success": 0.5, "eval/test/score": 0.5})
    head, _ = paper_table([run])
    assert head == ["algo", "reward", "detour test success"]


def test_notebook_01_figures_turns_from_1_units_and_every_axis_titled(group):
    fig = plots.reward_trajectory(group[0])
    _every_axis_titled(fig)
    assert "1.0" in fig.layout.yaxis.title.text and "from 1" in fig.layout.xaxis.title.text
    study = {"household": ([0.5, 1.0, 2.0], [True, False, False]), "shop": ([0.1, 0.2], [False, True])}
    fig = plots.process_return_by_outcome(study, 1.0)
    _every_axis_titled(fig)
    assert [t.name for t in fig.data] == ["won (1)", "lost (2)", "won (1)", "lost (1)"]


def test_a_table_is_html_in_jupyterlab_and_aligned_text_without_pipes():
    t = plots.table(["env", "final %"], [["detour", "100.0 ± 0.0"], ["shop", None]], caption="results")
    html = t._repr_html_()
    assert html.startswith("<table>") and "<th>final %</th>" in html and "<td>100.0 ± 0.0</td>" in html
    text = repr(t)
    assert "|" not in text and text.splitlines()[1].startswith("env") and "detour  100.0" in text
    assert t.markdown().startswith("| env | final % |")
    assert "&lt;b&gt;" in plots.table(["<b>"], [])._repr_html_()  # cells are escaped


def test_a_single_seed_curve_gets_no_band_title():
    """One seed draws its values, not a mean with a band: the legend says nothing of bands then; a
    group of several seeds draws its band and says so."""
    one = plots.learning_curves([fake_run("outcome", 0)], key="rollout/success")
    assert not one.layout.legend.title.text
    two = plots.learning_curves([fake_run("outcome", 0), fake_run("outcome", 1, success=(0.0, 0.3, 0.6))])
    assert two.layout.legend.title.text == "mean over seeds, band ± 1 std"


def test_a_share_is_drawn_on_its_whole_scale_with_a_title_in_words():
    """Notebook 06's invalid-action fraction: a 0-1 axis titled in words, not the raw metric key on
    -0.5..1.25."""
    run = fake_run("outcome")
    for row in run.rows[1:]:
        row["rollout/invalid_frac"] = 0.31
    fig = plots.learning_curves([run], key="rollout/invalid_frac")
    assert tuple(fig.layout.yaxis.range) == (-0.03, 1.03)
    assert fig.layout.yaxis.title.text == "invalid actions (share of turns)"


def test_every_seed_draws_each_runs_own_curve_in_its_groups_colour():
    runs = [fake_run("outcome", 0), fake_run("outcome", 1, success=(0.0, 0.3, 0.6)), fake_run("dense", 0)]
    fig = plots.learning_curves(runs, x="env_steps", every_seed=True)
    thin = [t for t in fig.data if not t.showlegend and t.line.width == 1]
    assert len(thin) == 3 and not any(t.fill == "toself" for t in fig.data)  # one per run, no band
    seed1 = next(t for t in thin if t.name.endswith("seed 1"))
    assert list(seed1.y) == [0.0, 30.0, 60.0]  # its own values, in %
    mean = next(t for t in fig.data if t.mode == "lines+markers" and "outcome" in t.name)
    assert seed1.line.color == mean.line.color
    assert fig.layout.legend.title.text == "mean over seeds, thin lines each seed"
