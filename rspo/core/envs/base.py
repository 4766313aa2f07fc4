"""The environment contract shared by every environment of the kit (docs/design.md §3).

Every environment is text in / text out, gymnasium-like:

    obs, info = env.reset(seed=None, task_id=None)
    obs, reward, terminated, truncated, info = env.step(action)
    action = env.expert_action()

``reward`` is the *outcome* reward of the step (non-zero only when the episode ends with a
result); the dense signal is ``info["process_reward"]``. Reward modes (outcome / dense / rspo) are
composed from these two by :mod:`rspo.core.rewards`, never inside the environment.

``info`` always carries the keys of :data:`INFO_KEYS`:

=====================  ===========  ===============================================================
key                    type         meaning
=====================  ===========  ===============================================================
task                   str          the instruction text of the current task
task_id                str          the stable id of the current task (``"<split>/<index>"``)
admissible_actions     list[str]    the actions that are legal now (a finite list)
anchor                 str          the raw state text used for GiGPO anchor grouping
won                    bool         the goal is achieved (the episode ended with success)
progress               float        0..1, fraction of goal conditions met now
process_reward         float        this step's dense (process) reward, 0 on reset
valid                  bool         the action was understood and legal (True on reset)
step                   int          number of steps taken in this episode
=====================  ===========  ===============================================================

An unparseable or illegal action never raises: it returns the environment's "nothing happens"
observation, ``valid=False``, and costs a step. Household and shop read action text in one way
(:func:`rspo.core.envs.text.normalize_action`): ASCII only - an action with any other character (a look-alike
letter, a Unicode space, a control character) is invalid - with case and whitespace runs ignored.

The same misuse raises the same error in every environment: ``step`` or ``expert_action`` before
``reset`` is ``RuntimeError("call reset() before ...")``; a bad ``seed``, split, task id, horizon or
misalignment is a ``ValueError`` naming it.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import Any

from rspo.core.registry import choice_error  # noqa: F401 (re-exported: rspo.core.envs.base.choice_error)

INFO_KEYS = (
    "task",
    "task_id",
    "admissible_actions",
    "anchor",
    "won",
    "progress",
    "process_reward",
    "valid",
    "step",
)

StepResult = tuple[str, float, bool, bool, dict[str, Any]]


class TextEnv(ABC):
    """Base class of the kit's environments: task selection by split, seed and id; step bookkeeping.

    Subclasses implement :meth:`_load_task`, :meth:`_step`, :meth:`expert_action` and
    :meth:`_info_extra`, and define ``name``, ``splits`` and ``default_max_steps``.

    Args:
        split: a name from ``splits``.
        max_steps: the horizon; the episode is *truncated* after this many steps.
        misalignment: 0..1, how strongly the process reward also pays for behaviour that does not
            serve the goal (each environment documents what exactly, in its ``process_reward`` docs).
    """

    name: str = ""
    splits: tuple[str, ...] = ()
    eval_splits: tuple[str, ...] = ()  # the splits that evaluation reports (ALFWorld: valid_*; WebShop: test)
    default_max_steps: int = 50
    process_reward_doc: str = ""  # what earns process reward, how much, and how it can mislead
    # constructor options that change only the process reward, not what the agent sees or does
    # (besides misalignment): a warm start, which imitates play, is built without them
    reward_only_options: tuple[str, ...] = ()

    def __init__(self, split: str = "train", max_steps: int | None = None, misalignment: float = 0.0):
        if split not in self.splits:
            raise choice_error(f"split of {self.name!r}", split, self.splits)
        if max_steps is None:
            max_steps = self.default_max_steps
        if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
        if not isinstance(misalignment, (int, float)) or not 0.0 <= float(misalignment) <= 1.0:
            raise ValueError(f"misalignment must be a number in [0, 1], got {misalignment!r}")
        self.split = split
        self.max_steps = max_steps
        self.misalignment = float(misalignment)
        self._rng = random.Random(0)
        self._task_ids: list[str] = self._split_task_ids(split)
        self._task_index = {t: i for i, t in enumerate(self._task_ids)}
        self.task_id: str | None = None
        self.steps = 0
        self.done = True

    # --- subclass interface ---------------------------------------------------------------
    @abstractmethod
    def _split_task_ids(self, split: str) -> list[str]:
        """The stable task ids of ``split``, in their fixed order."""

    @abstractmethod
    def _load_task(self, task_id: str) -> str:
        """Set up the episode state for ``task_id``; return the first observation."""

    @abstractmethod
    def _step(self, action: str) -> tuple[str, float, bool, bool, float]:
        """Apply ``action``; return (observation, outcome reward, terminated, valid, process reward)."""

    @abstractmethod
    def _info_extra(self) -> dict[str, Any]:
        """The state-dependent info keys: task, admissible_actions, anchor, won, progress."""

    @abstractmethod
    def expert_action(self) -> str:
        """An action of the environment's planner from the current state."""

    def memory(self) -> str:
        """A short summary of the episode so far for the agent's prompt (e.g. places visited); "" if none.

        Prompts keep only the last few observation/action pairs (docs/design.md §4); this is what lets a
        policy avoid loops, as ALFWorld agents keep a list of places they have been.
        """
        return ""

    # --- the contract -----------------------------------------------------------------------
    @property
    def task_ids(self) -> list[str]:
        """The stable ids of the tasks of this split, in order."""
        return list(self._task_ids)

    def __len__(self) -> int:
        return len(self._task_ids)

    def reset(self, seed: int | None = None, task_id: str | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode.

        ``task_id`` names the task exactly. Otherwise the task is drawn from the split by the
        environment's random generator, which ``seed`` re-seeds (as in gymnasium): the same seed
        gives the same task on every machine, and later resets without a seed continue from it.
        Seeds are non-negative (a negative one is a ValueError: Python's generator would draw ``-n``
        as ``n``), so distinct seeds are distinct streams.
        """
        if seed is not None:
            if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
                # random.Random(-n) draws as random.Random(n): a negative seed would repeat a positive one
                raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
            self._rng = random.Random(seed)
        if task_id is None:
            task_id = self._task_ids[self._rng.randrange(len(self._task_ids))]
        elif task_id not in self._task_index:
            raise choice_error(f"task id for {self.name!r} split {self.split!r}", task_id, self._task_ids)
        self.task_id = task_id
        self.steps = 0
        self.done = False
        obs = self._load_task(task_id)
        return obs, self._info(valid=True, process_reward=0.0)

    def step(self, action: str) -> StepResult:
        """Take one action; any string is accepted (an invalid one costs a step, ``valid=False``)."""
        if self.task_id is None:
            raise RuntimeError("call reset() before step()")
        if self.done:
            raise RuntimeError("the episode has ended; call reset() to start a new one")
        if not isinstance(action, str):
            action = "" if action is None else str(action)
        obs, reward, terminated, valid, process_reward = self._step(action)
        self.steps += 1
        truncated = not terminated and self.steps >= self.max_steps
        self.done = terminated or truncated
        return obs, float(reward), bool(terminated), bool(truncated), self._info(valid, process_reward)

    def _info(self, valid: bool, process_reward: float) -> dict[str, Any]:
        info = self._info_extra()
        info["task_id"] = self.task_id
        info["valid"] = bool(valid)
        info["process_reward"] = float(process_reward)
        info["step"] = self.steps
        return info
