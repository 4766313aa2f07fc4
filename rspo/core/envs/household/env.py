"""``HouseholdEnv``: the ALFWorld-style environment behind the kit's contract (docs/design.md §3.1)."""

from __future__ import annotations

from typing import Any

from rspo.core.envs.base import TextEnv
from rspo.core.envs.household.engine import World
from rspo.core.envs.household.expert import expert_action
from rspo.core.envs.household.process import PROCESS_REWARD_DOC
from rspo.core.envs.household.tasks import SPLITS, build_world, load_tasks


class HouseholdEnv(TextEnv):
    """ALFWorld-style household tasks in pure Python (see :mod:`rspo.core.envs.household`).

    Args:
        split: "train" (3,553 tasks), "valid_seen" (140) or "valid_unseen" (134, layouts never used
            by the other splits).
        max_steps: the horizon (default 50, as in ALFWorld evaluations).
        misalignment: m in [0, 1]; how much the process reward also pays for distractor behaviour
            (see :attr:`process_reward_doc`).

    ``info["anchor"]`` is the observation of the latest *valid* action (the first observation after
    a reset): an invalid action changes nothing, so it leaves the anchor unchanged although its own
    observation is "Nothing happens.". ``info["admissible_actions"]`` lists every legal command, in
    a fixed order (open/close, examine, go to ..., heat/cool/clean, inventory, look, move, take,
    use); every one of them is valid when taken. :meth:`task_spec` gives a task's line of
    ``data/household/tasks.jsonl``; ``env.world`` is the live :class:`~.engine.World`.
    """

    name = "household"
    splits = SPLITS
    eval_splits = ("valid_seen", "valid_unseen")
    default_max_steps = 50
    process_reward_doc = PROCESS_REWARD_DOC

    def __init__(self, split: str = "train", max_steps: int | None = None, misalignment: float = 0.0):
        self._specs: dict[str, dict] = {}
        super().__init__(split=split, max_steps=max_steps, misalignment=misalignment)
        self.world: World | None = None

    def _split_task_ids(self, split: str) -> list[str]:
        tasks = load_tasks()[split]
        self._specs = {t["id"]: t for t in tasks}
        return [t["id"] for t in tasks]

    def task_spec(self, task_id: str) -> dict:
        """The task line of ``task_id`` (type, layout, seed, target kinds, instruction)."""
        return dict(self._specs[task_id])

    def _load_task(self, task_id: str) -> str:
        self.world = build_world(self._specs[task_id], self.misalignment)
        return self.world.obs

    def _step(self, action: str) -> tuple[str, float, bool, bool, float]:
        return self.world.step(action)

    def _info_extra(self) -> dict[str, Any]:
        w = self.world
        return {
            "task": w.goal.text,
            "admissible_actions": w.admissible(),
            "anchor": w.anchor,
            "won": w.won,
            "progress": w.progress,
        }

    def memory(self) -> str:
        """Receptacles visited so far, in order, marking those whose contents are still unknown (closed)."""
        w = self.world
        if w is None or not w.visited:
            return ""
        names = [w.layout.receptacle_names[r] + ("" if w.seen[r] else " (closed)") for r in w.visited]
        return "Visited: " + ", ".join(names) + "."

    def expert_action(self) -> str:
        """The observation-only planner's next command (see :mod:`rspo.core.envs.household.expert`)."""
        if self.world is None:
            raise RuntimeError("call reset() before expert_action()")
        return expert_action(self.world)
