"""The policy interface the rollout and the trainer use (docs/design.md §5).

A policy maps per-step prompts (text, see :mod:`rspo.core.prompts`) to actions, in one of two modes:

- ``"score"``: the candidates (admissible actions) are scored by the sum of their token log-probs
  given the prompt, and the policy is the softmax over candidates (GLAM, Carta et al. 2023). The
  turn's log-prob is one number: ``log softmax(scores)[choice]``.
- ``"generate"``: the model writes the action; its log-prob is per generated token.

Both report per-turn log-probs as a padded ``(N, L)`` tensor with a mask, ``L = 1`` in score mode,
so the PPO-clip token loss is the same code for both.

The records a policy takes and returns (:class:`~rspo.core.records.ActionSample`,
:class:`~rspo.core.records.TurnInput`) live in :mod:`rspo.core.records` and are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch

from rspo.core.records import ActionSample, TurnInput
from rspo.core.registry import ACTION_MODES

__all__ = ["ACTION_MODES", "ActionSample", "Policy", "PolicyOutput", "TurnInput"]


@dataclass
class PolicyOutput:
    """Log-probs of taken actions under the current (or reference) policy.

    ================  ======  ===========================================================
    field             shape   meaning
    ================  ======  ===========================================================
    logp              (N, L)  log-prob of each action token (score mode: L = 1, the turn)
    mask              (N, L)  bool; True where ``logp`` is a real token
    entropy           (N,)    entropy of the turn's action distribution (score: exact over
                              candidates; generate: mean over the written tokens)
    values            (N,)    V(s) of each turn's prompt, or None without a value head
    ================  ======  ===========================================================
    """

    logp: torch.Tensor
    mask: torch.Tensor
    entropy: torch.Tensor
    values: torch.Tensor | None = None


@runtime_checkable
class Policy(Protocol):
    """What :mod:`rspo.core.rollout` and :mod:`rspo.core.trainer` call."""

    action_mode: str

    def act(
        self,
        prompts: list[str],
        candidates: list[list[str]],
        *,
        greedy: bool = False,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> list[ActionSample]:
        """One action per prompt, batched over all prompts (no gradient)."""
        ...

    def logprobs(
        self, turns: list[TurnInput], *, reference: bool = False, values: bool = False
    ) -> PolicyOutput:
        """Log-probs of the taken actions (with gradient unless ``reference``); ``reference=True``
        scores under the frozen reference policy (LoRA: adapters off), without gradient."""
        ...
