"""The policy interface the rollout and the trainer use (docs/design.md §5).

A policy maps per-step prompts (text, see :mod:`rspo.prompts`) to actions, in one of two modes:

- ``"score"``: the candidates (admissible actions) are scored by the sum of their token log-probs
  given the prompt, and the policy is the softmax over candidates (GLAM, Carta et al. 2023). The
  turn's log-prob is one number: ``log softmax(scores)[choice]``.
- ``"generate"``: the model writes the action; its log-prob is per generated token.

Both report per-turn log-probs as a padded ``(N, L)`` tensor with a mask, ``L = 1`` in score mode,
so the PPO-clip token loss is the same code for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import torch

from rspo.registry import ACTION_MODES  # noqa: F401 (re-exported: rspo.policies.ACTION_MODES)


@dataclass
class ActionSample:
    """One action chosen by a policy for one prompt.

    Attributes:
        action: the text sent to the environment.
        valid_format: the model's output parsed to an action (generate mode); always True in score mode.
        action_ids: the token ids of the action as the policy scored or wrote them.
        token_logprobs: behaviour log-probs, per generated token (generate) or ``[log pi(choice)]`` (score).
        choice: index of the action in the candidates (score mode), else None.
        value: the value head's V(s) of the prompt, when the policy has a value head.
        text: the raw model output (generate mode), for logging and the parser tests.
    """

    action: str
    valid_format: bool
    action_ids: list[int]
    token_logprobs: list[float]
    choice: int | None = None
    value: float | None = None
    text: str = ""

    @property
    def logprob(self) -> float:
        return float(sum(self.token_logprobs))


@dataclass
class TurnInput:
    """What the policy needs to re-score one taken turn: prompt, candidates and the taken action."""

    prompt: str
    candidates: list[str] | None  # score mode: the admissible actions, in the order scored
    choice: int | None  # score mode: the index taken
    action_ids: list[int] = field(default_factory=list)  # generate mode: the tokens written


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
    """What :mod:`rspo.rollout` and :mod:`rspo.trainer` call."""

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

    def evaluate(
        self, turns: list[TurnInput], *, reference: bool = False, values: bool = False
    ) -> PolicyOutput:
        """Log-probs of the taken actions (with gradient unless ``reference``); ``reference=True``
        scores under the frozen reference policy (LoRA: adapters off), without gradient."""
        ...
