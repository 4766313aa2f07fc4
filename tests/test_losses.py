"""rspo.core.losses: the PPO-clip loss, the KL estimate and the turn weights by hand, and cases that kill
the mutants mutmut left alive (benchmarks/mutation.py, docs/mutation.md).

The mutant cases add the inputs that tell a mutant apart: the default arguments, a token mode whose weights differ from
the trajectory mode's, a single and an empty batch, the KL clamp at +-20, importance weights on tokens
and a ratio exactly on the clip boundary.
"""

from __future__ import annotations

import math

import pytest
import torch

from rspo.core.losses import kl_k3, masked_turn_mean, ppo_clip_loss, turn_weights


def test_turn_weights_default_is_trajectory_and_token_mode_weighs_tokens():
    traj = torch.tensor([0, 0, 1])  # a 2-turn and a 1-turn trajectory
    tokens = torch.tensor([1, 3, 4])
    assert turn_weights(traj, tokens).tolist() == pytest.approx([0.25, 0.25, 0.5])  # the default mode
    assert turn_weights(traj, tokens, "trajectory").tolist() == pytest.approx([0.25, 0.25, 0.5])
    assert turn_weights(traj, tokens, "token").tolist() == pytest.approx([0.125, 0.375, 0.5])
    assert turn_weights(traj, tokens, "turn").tolist() == pytest.approx([1 / 3] * 3)


@pytest.mark.parametrize("mode", ["trajectory", "turn", "token"])
def test_turn_weights_of_one_turn_and_of_none(mode):
    assert turn_weights(torch.tensor([7]), torch.tensor([3]), mode).tolist() == [1.0]
    empty = turn_weights(torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long), mode)
    assert empty.shape == (0,) and empty.dtype == torch.float32


def test_ppo_clip_default_range_is_0_2_and_the_boundary_is_not_clipped():
    mask = torch.ones(2, 1, dtype=torch.bool)
    logp = torch.log(torch.tensor([[1.5], [1.1]]))
    loss, clipped = ppo_clip_loss(logp, torch.zeros(2, 1), torch.tensor([1.0, 1.0]), mask)
    assert loss.tolist() == pytest.approx([-1.2, -1.1]) and clipped.tolist() == [1.0, 0.0]
    # ratio exactly 1 + eps (1.25 and 0.25 are exact in float32): on the boundary, not clipped
    on_edge = torch.log(torch.tensor([[1.25], [0.75]]))
    assert torch.exp(on_edge).tolist() == [[1.25], [0.75]]
    loss, clipped = ppo_clip_loss(on_edge, torch.zeros(2, 1), torch.tensor([2.0, -2.0]), mask, clip_eps=0.25)
    assert clipped.tolist() == [0.0, 0.0] and loss.tolist() == pytest.approx([-2.5, 1.5])


def test_ppo_clip_token_weights_scale_each_tokens_surrogate():
    logp = torch.log(torch.tensor([[1.1, 0.9], [1.0, 1.0]]))
    mask = torch.tensor([[True, True], [True, False]])
    adv = torch.tensor([2.0, -1.0])
    w = torch.tensor([[0.5, 0.25], [0.4, 9.0]])  # the padded token's weight is ignored
    loss, _ = ppo_clip_loss(logp, torch.zeros(2, 2), adv, mask, token_weights=w)
    # turn 0: -(0.5 * 1.1 * 2 + 0.25 * 0.9 * 2) / 2; turn 1: -(0.4 * 1 * -1)
    assert loss.tolist() == pytest.approx([-(1.1 + 0.45) / 2, 0.4])
    plain, _ = ppo_clip_loss(logp, torch.zeros(2, 2), adv, mask)
    assert plain.tolist() == pytest.approx([-(2.2 + 1.8) / 2, 1.0])


def test_kl_k3_clamps_the_log_ratio_at_20():
    mask = torch.ones(4, 1, dtype=torch.bool)
    logp = torch.zeros(4, 1)
    ref = torch.tensor([[-30.0], [30.0], [-20.5], [20.5]])
    want = [math.exp(-20) + 20 - 1, math.exp(20) - 20 - 1] * 2  # r clamped to [-20, 20]
    assert kl_k3(logp.double(), ref.double(), mask).tolist() == pytest.approx(want, rel=1e-12)


def test_masked_turn_mean_averages_real_tokens_and_an_all_padding_turn_is_zero():
    x = torch.tensor([[1.0, 3.0, 100.0], [5.0, 7.0, 9.0], [4.0, 4.0, 4.0]])
    mask = torch.tensor([[True, True, False], [True, True, True], [False, False, False]])
    assert masked_turn_mean(x, mask).tolist() == pytest.approx([2.0, 7.0, 0.0])


def test_turn_weights_each_trajectory_weighs_the_same():
    traj = torch.tensor([0, 0, 0, 0, 1])  # a 4-turn and a 1-turn trajectory
    tokens = torch.tensor([1, 1, 1, 1, 1])
    assert turn_weights(traj, tokens, "trajectory").tolist() == pytest.approx([0.125] * 4 + [0.5])
    assert turn_weights(traj, tokens, "turn").tolist() == pytest.approx([0.2] * 5)
    assert turn_weights(traj, torch.tensor([1, 1, 1, 1, 4]), "token").tolist() == pytest.approx(
        [0.125] * 4 + [0.5]
    )
    with pytest.raises(ValueError, match="trajectory, turn, token"):
        turn_weights(traj, tokens, "sample")


def test_ppo_clip_by_hand():
    logp = torch.log(torch.tensor([[1.5], [0.5], [1.1]]))  # ratios 1.5, 0.5, 1.1 against old log 1 = 0
    old = torch.zeros(3, 1)
    mask = torch.ones(3, 1, dtype=torch.bool)
    loss, clipped = ppo_clip_loss(logp, old, torch.tensor([1.0, -1.0, 2.0]), mask, clip_eps=0.2)
    # A>0, r=1.5 -> min(1.5, 1.2)*1 = 1.2; A<0, r=0.5 -> min(-0.5, -0.8) = -0.8; r=1.1 -> 2.2
    assert loss.tolist() == pytest.approx([-1.2, 0.8, -2.2])
    assert clipped.tolist() == [1.0, 1.0, 0.0]


def test_ppo_clip_averages_tokens_within_a_turn_and_ignores_padding():
    logp = torch.tensor([[0.0, 0.0, 5.0]])
    mask = torch.tensor([[True, True, False]])
    loss, _ = ppo_clip_loss(logp, torch.zeros(1, 3), torch.tensor([3.0]), mask)
    assert loss.tolist() == pytest.approx([-3.0])


def test_kl_k3_zero_at_equality_and_positive_otherwise():
    mask = torch.ones(2, 1, dtype=torch.bool)
    assert kl_k3(torch.tensor([[-1.0], [-2.0]]), torch.tensor([[-1.0], [-2.0]]), mask).tolist() == [0.0, 0.0]
    r = math.log(0.5)  # ref/pi = 0.5
    assert kl_k3(torch.tensor([[0.0]]), torch.tensor([[r]]), mask[:1]).item() == pytest.approx(0.5 - r - 1)
