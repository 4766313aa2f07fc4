"""The kit's registries: one table per concept, everything else derived from it (standard library only).

- :data:`ESTIMATORS`: the advantage estimators. An :class:`Estimator` entry names its pure function
  (in :mod:`rspo.core.advantages`), the ``TrainConfig.algo`` that selects it, the ``TrainConfig`` fields
  it takes as keywords and whether it needs a critic (a value head). ``TrainConfig`` validation, the
  CLI's choices, :func:`rspo.core.advantages.compute_advantages` and the update read it.
- :data:`REWARD_MODES`: the reward modes, each a pure function ``(episodes, spec) -> per-turn
  rewards`` (:mod:`rspo.core.rewards`); ``TrainConfig.reward`` takes their names and :data:`SWAP`.
- :data:`SWAP_VARIANTS`: RSPO's variants (``TrainConfig.swap_variant``): how the explorer's episodes
  reach the learner (a function of :mod:`rspo.core.explorer`), or none with the learner's reward changing
  by iteration instead.
- the environments: :data:`rspo.core.envs.ENVS` (:class:`rspo.core.envs.registry.EnvSpec` entries), built on
  the same :class:`Registry`.
- the named choices shared by the config and the modules that implement them (:data:`ACTION_MODES`,
  :data:`LOSS_AGG`, :data:`NORMALIZE`, :data:`EPISODE_STATS`), stated once here.

Adding an estimator, a reward mode or an RSPO variant is one function and one entry::

    ESTIMATORS.register(Estimator("my_est", "rspo.core.advantages:my_est", options={"gamma": "gamma"}))
    REWARD_MODES.register(RewardMode("my_reward", "my_module:my_rewards"))
    SWAP_VARIANTS.register(SwapVariant("my_variant", hand_over="my_module:my_hand_over"))

and :meth:`Registry.temporary` adds entries for the length of a ``with`` block (tests, notebooks).

This module imports nothing of the kit (and no torch), so that the config can be validated, and
``import rspo.core.config`` stays cheap.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

# named choices, each stated once (the config validates against them; the code that implements each
# checks its argument against the same tuple)
ACTION_MODES = (
    "score",
    "generate",
)  # rspo.core.policies: softmax over admissible actions | free text, parsed
LOSS_AGG = ("trajectory", "turn", "token")  # rspo.core.losses.turn_weights
NORMALIZE = ("std", "none")  # rspo.core.advantages: group normalisation (TrainConfig.adv_norm)
EPISODE_STATS = ("trajectory", "turn")  # rspo.core.advantages: episode mean/std over trajectories | turn rows


def resolve(target: str | Callable) -> Any:
    """``"package.module:attribute"`` imported on first use (a callable is returned as it is)."""
    if not isinstance(target, str):
        return target
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def choice_error(kind: str, value: object, choices) -> ValueError:
    """A ValueError that names the valid choices, e.g. ``unknown split 'x'; choose one of: a, b``."""
    choices = list(choices)
    shown = ", ".join(map(str, choices[:12])) + (
        f", ... ({len(choices)} in all)" if len(choices) > 12 else ""
    )
    return ValueError(f"unknown {kind} {value!r}; choose one of: {shown}")


E = TypeVar("E")


class Registry(Mapping, Generic[E]):
    """Named entries (each with a ``name``) in registration order; a read-only mapping name -> entry.

    ``registry[name]`` raises KeyError; :meth:`entry` raises a ValueError naming the choices.
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, E] = {}

    def register(self, entry: E, *, replace: bool = False) -> E:
        """Add ``entry`` under ``entry.name``; a second entry of one name is an error unless ``replace``."""
        name = entry.name
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.kind} needs a non-empty name, got {name!r}")
        if name in self._entries and not replace:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def entry(self, name: str) -> E:
        """The entry ``name``; a ValueError naming the registered ones if there is none."""
        if name not in self._entries:
            raise choice_error(self.kind, name, self.names())
        return self._entries[name]

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._entries)

    @contextlib.contextmanager
    def temporary(self, *entries: E) -> Iterator[Registry[E]]:
        """Register ``entries`` for the length of a ``with`` block; the registry is restored after
        (entries of the same name as registered ones replace them meanwhile)."""
        saved = dict(self._entries)
        try:
            for entry in entries:
                self.register(entry, replace=True)
            yield self
        finally:
            self._entries.clear()
            self._entries.update(saved)

    def __getitem__(self, name: str) -> E:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"


@dataclass(frozen=True)
class Estimator:
    """An advantage estimator: a pure function on flat per-turn tensors (see :mod:`rspo.core.advantages`).

    The function takes the batch fields its signature names (``task_ids``, ``traj_ids``,
    ``step_rewards``, ``episode_returns``, ``anchor_ids``, ``values``, ...) and keyword options; it
    returns the advantages ``(N,)``, or ``(advantages, value targets)`` when it trains a critic.
    """

    name: str  # the estimator's name (rspo.core.advantages.compute_advantages)
    fn: str | Callable  # the function, or "module:function" (imported on first use)
    algo: str = ""  # the TrainConfig.algo that trains with it; "" -> the estimator's name
    options: Mapping[str, str] = field(default_factory=dict)  # estimator keyword -> TrainConfig field
    critic: bool = False  # needs a value head: the policy gets one, the batch carries its values

    @property
    def algorithm(self) -> str:
        return self.algo or self.name

    @property
    def function(self) -> Callable:
        return resolve(self.fn)

    def config_options(self, cfg) -> dict:
        """The estimator's keyword options read from a ``TrainConfig``."""
        return {keyword: getattr(cfg, attr) for keyword, attr in self.options.items()}


ESTIMATORS: Registry[Estimator] = Registry("advantage estimator")
for _entry in (
    Estimator(
        "grpo",
        "rspo.core.advantages:grpo",
        options={"normalize": "adv_norm", "episode_stats": "episode_stats"},
    ),
    Estimator(
        "gae",
        "rspo.core.advantages:gae",
        algo="ppo",
        options={"gamma": "gae_gamma", "lam": "gae_lambda"},
        critic=True,
    ),
    Estimator(
        "gigpo",
        "rspo.core.advantages:gigpo",
        options={
            "gamma": "gamma",
            "omega": "omega",
            "normalize": "adv_norm",
            "episode_stats": "episode_stats",
        },
    ),
    Estimator("rloo", "rspo.core.advantages:rloo"),
    Estimator(
        "turn_level", "rspo.core.advantages:turn_level", options={"gamma": "gamma", "normalize": "adv_norm"}
    ),
):
    ESTIMATORS.register(_entry)


def algorithms() -> tuple[str, ...]:
    """The ``TrainConfig.algo`` choices, in registration order (one per estimator)."""
    return tuple(e.algorithm for e in ESTIMATORS.values())


def estimator_of(algo: str) -> Estimator:
    """The estimator that ``algo`` trains with; a ValueError naming the algorithms if none."""
    for entry in ESTIMATORS.values():
        if entry.algorithm == algo:
            return entry
    raise choice_error("algo", algo, algorithms())


@dataclass(frozen=True)
class RewardMode:
    """A reward mode: ``fn(episodes, spec) -> one list of per-turn rewards per episode``
    (:class:`rspo.core.rewards.RewardSpec` holds the constants)."""

    name: str  # TrainConfig.reward's value that trains with it
    fn: str | Callable  # the function, or "module:function" (imported on first use)

    @property
    def function(self) -> Callable:
        return resolve(self.fn)


REWARD_MODES: Registry[RewardMode] = Registry("reward mode")
for _mode in (
    RewardMode("outcome", "rspo.core.rewards:outcome_rewards"),  # the sparse baseline: the true objective
    RewardMode("dense", "rspo.core.rewards:dense_rewards"),  # outcome + the process reward at every turn
):
    REWARD_MODES.register(_mode)

# TrainConfig.reward's one value that is a method, not a reward mode: the reward swap (RSPO, docs/design.md
# §7) - the learner trains on "outcome", an explorer (or the learner's first iterations) on "dense".
# The name is kept as users type it (``--reward rspo``) and as every committed run's config and name hold it.
SWAP = "rspo"
SWAP_REWARDS = ("outcome", "dense")  # the learner's reward, the explorer's (reward modes above)


def reward_choices() -> tuple[str, ...]:
    """``TrainConfig.reward``'s choices: the reward modes as registered now, then :data:`SWAP`."""
    return (*REWARD_MODES, SWAP)


@dataclass(frozen=True)
class SwapVariant:
    """A variant of the reward swap (``TrainConfig.swap_variant``, with ``reward="rspo"``).

    ``hand_over(trainer, iteration, episodes, batch, explored) -> (batch, metrics)`` turns the
    explorer's episodes of the iteration (``explored``) into the learner's batch; with one, the trainer
    builds an explorer (:class:`rspo.core.explorer.Explorer`: a second policy on the dense reward, its
    optimizer and a replay buffer, all checkpointed). ``hand_over=None``: no explorer; ``dense_first``
    then trains the learner on the dense reward for ``TrainConfig.schedule_frac`` of the iterations.
    """

    name: str
    hand_over: str | Callable | None = None  # the function, "module:function", or None (no explorer)
    dense_first: bool = False  # the learner's reward: dense for the first schedule_frac, outcome after

    @property
    def explorer(self) -> bool:
        return self.hand_over is not None

    @property
    def function(self) -> Callable:
        return resolve(self.hand_over)


SWAP_VARIANTS: Registry[SwapVariant] = Registry("swap variant")
for _variant in (
    # relabelled explorer groups through a replay buffer, an off-policy term with truncated weights
    SwapVariant("offpolicy", hand_over="rspo.core.explorer:replay"),
    # relabelled explorer episodes join the learner's groups of the same tasks
    SwapVariant("mixed", hand_over="rspo.core.explorer:mix"),
    # one policy: dense reward first, outcome after
    SwapVariant("schedule", dense_first=True),
):
    SWAP_VARIANTS.register(_variant)
