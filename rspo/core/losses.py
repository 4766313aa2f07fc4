"""Policy-gradient losses as pure tensor functions (docs/design.md §8).

Shapes: ``N`` turns in a minibatch, ``L`` action tokens per turn (``L = 1`` in score mode, where
a turn's log-prob is the log-softmax over candidates).

=============  ======  ================================================================
symbol         shape   meaning
=============  ======  ================================================================
logp           (N, L)  log pi_theta(token) of the taken action's tokens, with gradient
old_logp       (N, L)  behaviour log-probs (the policy that collected the turn)
ref_logp       (N, L)  log-probs under the frozen reference policy
adv            (N,)    per-turn advantage, the same for every token of the turn
mask           (N, L)  bool, True on real tokens
weights        (N,)    per-turn weights of the loss aggregation (:func:`turn_weights`)
=============  ======  ================================================================
"""

from __future__ import annotations

import torch

from rspo.core.registry import LOSS_AGG


def turn_weights(traj_ids: torch.Tensor, n_tokens: torch.Tensor, mode: str = "trajectory") -> torch.Tensor:
    """Weights ``(N,)`` summing to 1 that decide how much each turn counts in the loss.

    - ``"trajectory"`` (default): every trajectory weighs the same whatever its length; within a
      trajectory every turn the same (failed episodes run to the horizon and would otherwise
      dominate the update); per-token losses are averaged within a turn.
    - ``"turn"``: every turn weighs the same (long trajectories count more).
    - ``"token"``: every token weighs the same (DAPO's token-level mean); the returned weight of a
      turn is its token share, and per-token losses are still averaged within the turn first.
    """
    if mode not in LOSS_AGG:
        raise ValueError(f"unknown loss aggregation {mode!r}; choose one of: {', '.join(LOSS_AGG)}")
    n = traj_ids.shape[0]
    if n == 0:
        return torch.zeros(0)
    if mode == "turn":
        return torch.full((n,), 1.0 / n)
    if mode == "token":
        t = n_tokens.double()
        return (t / t.sum()).float()
    _, inv, counts = torch.unique(traj_ids, return_inverse=True, return_counts=True)
    return (1.0 / (counts[inv].double() * counts.numel())).float()


def masked_turn_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over the real tokens of each turn: ``(N, L) -> (N,)``."""
    m = mask.to(x.dtype)
    return (x * m).sum(-1) / m.sum(-1).clamp_min(1.0)


def ppo_clip_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
    token_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-turn PPO-clip surrogate loss ``(N,)`` and per-turn clipped fraction ``(N,)``.

    loss_t = -w_t min(rho_t A, clip(rho_t, 1 - eps, 1 + eps) A), rho_t = exp(logp - old_logp), per
    token (Schulman et al. 2017, eq. 7), averaged over the turn's tokens. ``token_weights`` ``(N, L)``
    are gradient-free per-token weights ``w_t`` (default 1): the truncated importance weights of
    off-policy turns in the decoupled objective (Hilton et al. 2021), where ``old_logp`` is then the
    proximal (learner-at-update-start) policy rather than the behaviour policy.
    """
    ratio = torch.exp(logp - old_logp)  # (N, L)
    a = adv.unsqueeze(-1)  # (N, 1)
    surrogate = torch.minimum(ratio * a, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * a)
    if token_weights is not None:
        surrogate = surrogate * token_weights.detach()
    clipped = ((ratio - 1).abs() > clip_eps).to(logp.dtype)
    return masked_turn_mean(-surrogate, mask), masked_turn_mean(clipped, mask)


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-turn KL(pi_theta || pi_ref) estimate ``(N,)``: Schulman's k3 = exp(r) - r - 1, r = ref - logp.

    Non-negative, unbiased for sampled tokens; averaged over the turn's tokens.
    """
    r = (ref_logp - logp).clamp(-20.0, 20.0)
    return masked_turn_mean(torch.exp(r) - r - 1.0, mask)
