"""``TextWorldEnv``: TextWorld games (e.g. generated offline with ``tw-make``) behind the kit's contract
(docs/design.md §3.4). TextWorld is imported on first use."""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rspo.core.envs.base import TextEnv
from rspo.core.envs.text import normalize_action

NOTHING = "Nothing happens."
GAME_SUFFIXES = (".z8", ".ulx")
MAKE_HELP = (
    "generate games offline with TextWorld's tw-make (pip install -e .[textworld]), e.g. "
    "`tw-make custom --world-size 5 --nb-objects 10 --quest-length 5 --seed 1 --output <folder>/train/g1.z8`, "
    "and pass games=<folder> (or set TEXTWORLD_GAMES)"
)
_MAX_ACTION_CHARS = 200
TAKE_REWARD = 0.1

PROCESS_REWARD_DOC = """\
textworld process reward (info["process_reward"]; the outcome reward is 1.0 on a won game)

What earns it. Plan progress: TextWorld replans the quest's walkthrough from every state
(policy_commands); progress = 1 - (commands left) / (commands left at reset), 1 once won. The process
reward pays 0.5 x each rise of the episode's best progress, so a full solution collects 0.5. A
command that makes the remaining plan shorter (a step of the quest, or an unblocking move) pays; one
that makes it longer pays nothing until the agent is back beyond its best.
Invalid actions earn nothing here (their penalty belongs to rspo.core.rewards).

How it can mislead: the misalignment knob m (misalignment=m, 0..1) adds m x 0.1 for every distinct
object the agent picks up (it appears in the inventory for the first time in the episode), whether the
quest needs it or not: collecting things looks like progress in a text adventure. At m = 0 the reward
is aligned; at m = 1 a room full of loose objects pays more than the plan's 0.5.
"""


def clean(feedback: str) -> str:
    """TextWorld's feedback without the interpreter's trailing prompt and status line (``>  -= Room =-0/1``)
    and without runs of blank lines."""
    text = re.sub(r"\n>[^\n]*$", "", (feedback or "").rstrip())
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def inventory_items(text: str) -> list[str]:
    """``"You are carrying: a glass and a napkin."`` -> ``["a glass", "a napkin"]`` ([] when empty)."""
    if ":" not in (text or ""):
        return []
    body = text.split(":", 1)[1].strip().rstrip(".")
    return [i.strip().lower() for i in re.split(r", and |, | and ", body) if i.strip()]


def _game_files(source) -> list[Path]:
    if isinstance(source, (str, os.PathLike)):
        p = Path(source).expanduser()
        if p.is_dir():
            return sorted(f for f in p.rglob("*") if f.suffix in GAME_SUFFIXES)
        return [p] if p.is_file() else []
    return sorted(Path(f).expanduser() for f in source)


def split_games(games, splits: Sequence[str]) -> dict[str, list[Path]]:
    """``{split: [game file, ...]}`` from ``games``: a mapping split -> folder or list of files; a
    folder with one sub-folder per split; or one pool (a folder without split folders, a list of
    files) that every split uses."""
    if isinstance(games, Mapping):
        return {s: _game_files(games[s]) if s in games else [] for s in splits}
    if isinstance(games, (str, os.PathLike)) and all((Path(games) / s).is_dir() for s in splits):
        return {s: _game_files(Path(games) / s) for s in splits}
    pool = _game_files(games)
    return {s: pool for s in splits}


class TextWorldEnv(TextEnv):
    """TextWorld games behind the contract.

    Args:
        split: "train" or "test".
        max_steps: the horizon (default 50).
        misalignment: m in [0, 1] (see :attr:`process_reward_doc`).
        games: the game files (``.z8`` / ``.ulx``, each with TextWorld's ``.json`` beside it): a folder
            with ``train/`` and ``test/`` sub-folders, a mapping split -> folder or files, or one pool
            (a folder, a list of files) that both splits use; default ``$TEXTWORLD_GAMES``.

    Task ids are ``"<split>/<index>"`` over the split's files in sorted order. ``info["task"]`` is the
    game's objective; ``info["admissible_actions"]`` TextWorld's admissible commands;
    ``info["anchor"]`` the feedback of the latest valid command. An action is read as household reads
    it (:func:`rspo.core.envs.text.normalize_action`); one that is not admissible is "Nothing happens." and
    does not reach the game. A lost game ends the episode with reward 0. The expert is TextWorld's own
    planner (the first of ``policy_commands``), which solves every generated quest.
    """

    name = "textworld"
    splits = ("train", "test")
    eval_splits = ("test",)
    default_max_steps = 50
    process_reward_doc = PROCESS_REWARD_DOC

    def __init__(
        self, split: str = "train", max_steps: int | None = None, misalignment: float = 0.0, games=None
    ):
        self._source = games if games is not None else os.environ.get("TEXTWORLD_GAMES")
        if not self._source:
            raise FileNotFoundError(f"no TextWorld games given; {MAKE_HELP}")
        self._games: list[Path] = []
        super().__init__(split=split, max_steps=max_steps, misalignment=misalignment)
        self._engine = None
        self._loaded: Path | None = None
        self._state = None

    def _split_task_ids(self, split: str) -> list[str]:
        self._games = split_games(self._source, self.splits)[split]
        if not self._games:
            raise FileNotFoundError(
                f"no TextWorld game files for split {split!r} in {self._source}; {MAKE_HELP}"
            )
        return [f"{split}/{i:05d}" for i in range(len(self._games))]

    def game_file(self, task_id: str) -> Path:
        """The game file of ``task_id``."""
        return self._games[self._task_index[task_id]]

    def _load_task(self, task_id: str) -> str:
        try:
            import textworld
        except ImportError as err:
            raise ImportError(f"TextWorld is not installed ({err}): pip install -e .[textworld]") from err

        path = self.game_file(task_id)
        if self._loaded != path:
            if self._engine is not None:
                self._engine.close()
            infos = textworld.EnvInfos(
                feedback=True, objective=True, admissible_commands=True, won=True, lost=True,
                policy_commands=True, inventory=True,
            )  # fmt: skip
            with warnings.catch_warnings():  # jericho: "not fully supported ... score detection disabled"
                warnings.filterwarnings("ignore", message=".*not fully supported")
                self._engine = textworld.start(str(path), request_infos=infos)
                self._state = state = self._engine.reset()
            self._loaded = path
        else:
            self._state = state = self._engine.reset()
        self.anchor = clean(state["feedback"])
        self._plan0 = max(1, len(state["policy_commands"] or ()))
        self._progress = self._best = 0.0
        self._held: set[str] = set()
        self._note_inventory()
        return self.anchor

    def _note_inventory(self) -> int:
        """Record the objects in the inventory; how many were never held before in this episode."""
        new = [i for i in inventory_items(self._state["inventory"]) if i not in self._held]
        self._held.update(new)
        return len(new)

    def _step(self, action: str) -> tuple[str, float, bool, bool, float]:
        a = normalize_action(action) if len(action) <= _MAX_ACTION_CHARS else None
        if a is None or a not in self._state["admissible_commands"]:
            return NOTHING, 0.0, False, False, 0.0
        self._state, _, done = self._engine.step(a)
        obs = self.anchor = clean(self._state["feedback"])
        won = bool(self._state["won"])
        left = len(self._state["policy_commands"] or ())
        self._progress = 1.0 if won else min(1.0, max(0.0, 1.0 - left / self._plan0))
        reward = 0.5 * max(0.0, self._progress - self._best)
        self._best = max(self._best, self._progress)
        new = self._note_inventory()
        if self.misalignment and new:
            reward += self.misalignment * TAKE_REWARD * new
        return obs, (1.0 if won else 0.0), bool(done or won or self._state["lost"]), True, reward

    def _info_extra(self) -> dict[str, Any]:
        s = self._state
        return {
            "task": s["objective"] or "",
            "admissible_actions": list(s["admissible_commands"]),
            "anchor": self.anchor,
            "won": bool(s["won"]),
            "progress": float(self._progress),
        }

    def expert_action(self) -> str:
        """TextWorld's planner's next command from the current state ("look" once won)."""
        if self._state is None or self.task_id is None:
            raise RuntimeError("call reset() before expert_action()")
        plan = self._state["policy_commands"] or []
        return plan[0] if plan and not self._state["won"] else "look"

    def close(self) -> None:
        """Close the game interpreter."""
        if self._engine is not None:
            self._engine.close()
            self._engine, self._loaded = None, None
