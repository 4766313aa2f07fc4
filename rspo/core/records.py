"""Plain records that rollouts, policies and training pass between them (no dependencies).

- :class:`ActionSample`: one action a policy chose for one prompt (``Policy.act``);
- :class:`TurnInput`: what a policy needs to re-score one taken turn (``Policy.logprobs``);
- :class:`Turn`, :class:`Episode`: one step and one trajectory of a rollout (:mod:`rspo.core.rollout`).

They are re-exported where they were first defined (:mod:`rspo.core.policies.base`, :mod:`rspo.core.rollout`),
and import nothing of the kit, so any module may use them without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
class Turn:
    """One step of one episode, with everything training needs.

    ``outcome_reward`` is the environment's outcome reward for the step; ``process_reward`` the dense one;
    ``valid`` is False when the environment rejected the action (or generate mode wrote no action).
    """

    prompt: str
    candidates: list[str]
    action: str
    choice: int | None
    action_ids: list[int]
    token_logprobs: list[float]  # behaviour log-probs (the policy that acted)
    anchor: str
    outcome_reward: float
    process_reward: float
    valid: bool
    value: float | None = None
    ref_logprobs: list[float] | None = None  # log-probs under the run's KL reference, once computed

    @property
    def logprob(self) -> float:
        return float(sum(self.token_logprobs))


@dataclass
class Episode:
    """One trajectory: ``group`` indexes the task within the batch, ``copy`` the copy within its group."""

    env: str
    task_id: str
    group: int
    copy: int
    turns: list[Turn] = field(default_factory=list)
    won: bool = False
    score: float = 0.0  # total outcome reward (household: 1 on success; shop: WebShop reward r)
    progress: float = 0.0
    truncated: bool = False
    source: str = "learner"  # who collected it ("learner", "explorer")

    def __len__(self) -> int:
        return len(self.turns)
