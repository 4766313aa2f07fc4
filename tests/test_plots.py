"""The shared plotly figures: shapes, the per-turn layout, and the PNG-or-HTML export."""

from __future__ import annotations

import pytest

from rspo import plots
from rspo.policies.scripted import EpsilonExpert
from rspo.rollout import collect, make_envs


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
    from rspo.plots import PALETTE

    assert len(set(PALETTE[:9])) == 9  # 3 algos x 3 reward modes in one figure, no colour repeated
