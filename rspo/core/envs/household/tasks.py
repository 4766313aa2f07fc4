"""Task lists: generation from one master seed, the committed ``data/household/tasks.jsonl``, and
rebuilding a task's world from its line.

A task line (one JSON object per line, keys in this order)::

    {"id": "train/00000", "type": "pick_heat_then_place_in_recep", "layout": 17, "room": "kitchen",
     "seed": 2864434397, "obj": "egg", "recep": "countertop", "lamp": null,
     "task": "heat some egg and put it in countertop."}

``layout`` names the room (:func:`~.world.get_layout`), ``seed`` places the objects
(:func:`~.world.place_objects`); ``obj`` / ``recep`` / ``lamp`` are the goal's kinds.

Generation (:func:`build_tasks`): for each split, the per-type counts of ALFWorld's split are
shuffled; for each, a layout of a room kind that hosts that type is drawn (train and valid_seen from
the *seen* layouts, valid_unseen from the others), then a target kind, a goal receptacle kind, a
template and a placement seed. A candidate is rejected when its goal is impossible in that layout,
when (valid_seen) the same (layout, type, target, receptacle) occurs in train, or when the
observation-only expert does not solve it within :data:`EXPERT_STEP_LIMIT` steps; ALFWorld likewise
keeps only tasks its planner solves. The rejection counts are returned for the README.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from rspo.core import paths
from rspo.core.envs.household.catalogue import (
    LAMPS,
    LOOK,
    SIMPLE,
    SPLIT_COUNTS,
    TASK_ROOMS,
    TASK_TARGETS,
    TASK_TRANSFORM,
    TASK_TYPES,
    TEMPLATES,
    TRANSFORM_GOALS,
    TRANSFORMS,
    TWO,
)
from rspo.core.envs.household.engine import Goal, World
from rspo.core.envs.household.world import (
    N_LAYOUTS,
    get_layout,
    layout_is_seen,
    layout_room,
    place_objects,
    placement_kinds,
    room_object_kinds,
)

MASTER_SEED = 20210301  # ALFWorld's arXiv month; any fixed int would do
EXPERT_STEP_LIMIT = 40
SPLITS = ("train", "valid_seen", "valid_unseen")
TASKS_PATH = paths.CHECKOUT / "data" / "household" / "tasks.jsonl"
_KEYS = ("id", "type", "layout", "room", "seed", "obj", "recep", "lamp", "task")


def build_world(spec: dict, misalignment: float = 0.0) -> World:
    """The initial world of the task described by ``spec`` (a task line)."""
    layout = get_layout(spec["layout"])
    avoid = spec["recep"] if spec["type"] in (SIMPLE, TWO) else None
    kinds, where = place_objects(layout, spec["seed"], spec["obj"], spec["type"] == TWO, spec["lamp"], avoid)
    goal = Goal(spec["type"], spec["obj"], spec["recep"], spec["lamp"], spec["task"])
    return World(layout, kinds, where, goal, misalignment)


def expert_steps(spec: dict, limit: int = EXPERT_STEP_LIMIT) -> int | None:
    """Steps the expert needs on the task (None if it does not finish within ``limit``)."""
    from rspo.core.envs.household.expert import expert_action

    w = build_world(spec)
    for step in range(1, limit + 1):
        w.step(expert_action(w))
        if w.won:
            return step
    return None


def _goal_kinds(task_type: str, obj: str, layout) -> list[str]:
    """Goal receptacle kinds for ``obj`` in ``layout`` (present; for place tasks, leaving somewhere
    else for the object to start)."""
    own = placement_kinds(layout, obj)
    transform = TASK_TRANSFORM[task_type]
    if transform is None:
        return [k for k in own if placement_kinds(layout, obj, exclude=k)]
    appliances = TRANSFORMS[transform][1]
    extra = [k for k in TRANSFORM_GOALS[transform] if k in layout.by_kind and k not in own]
    return [k for k in own + extra if k not in appliances]


def sample_task(rng: random.Random, task_type: str, layout_number: int) -> dict | None:
    """A candidate task of ``task_type`` in a layout (None when that layout cannot host one)."""
    layout = get_layout(layout_number)
    wanted = TASK_TARGETS[task_type]
    objs = [k for k in room_object_kinds(layout) if k not in LAMPS and (wanted is None or k in wanted)]
    if not objs:
        return None
    obj = rng.choice(objs)
    recep = lamp = None
    if task_type == LOOK:
        lamps = [k for k in sorted(LAMPS) if placement_kinds(layout, k)]
        if not lamps:
            return None
        lamp = rng.choice(lamps)
    else:
        transform = TASK_TRANSFORM[task_type]
        if transform and not any(k in layout.by_kind for k in TRANSFORMS[transform][1]):
            return None
        goals = _goal_kinds(task_type, obj, layout)
        if not goals:
            return None
        recep = rng.choice(goals)
    text = rng.choice(TEMPLATES[task_type]).format(obj=obj, recep=recep, lamp=lamp)
    return {
        "id": "",
        "type": task_type,
        "layout": layout_number,
        "room": layout.room,
        "seed": rng.getrandbits(32),
        "obj": obj,
        "recep": recep,
        "lamp": lamp,
        "task": text,
    }


def _combo(spec: dict) -> tuple:
    return (spec["layout"], spec["type"], spec["obj"], spec["recep"] or spec["lamp"])


def _build_split(split, rng, layouts, exclude, stats) -> list[dict]:
    types = [t for t in TASK_TYPES for _ in range(SPLIT_COUNTS[split][t])]
    rng.shuffle(types)
    out = []
    for index, task_type in enumerate(types):
        hosts = [n for n in layouts if layout_room(n) in TASK_ROOMS[task_type]]
        while True:
            spec = sample_task(rng, task_type, rng.choice(hosts))
            if spec is None:
                stats["infeasible"] += 1
            elif _combo(spec) in exclude:
                stats["seen_in_train"] += 1
            elif expert_steps(spec) is None:
                stats["expert_over_limit"] += 1
            else:
                break
        spec["id"] = f"{split}/{index:05d}"
        out.append(spec)
    return out


def build_tasks() -> tuple[dict[str, list[dict]], dict[str, int]]:
    """All splits from :data:`MASTER_SEED`: ``({split: [task line, ...]}, rejection counts)``."""
    rng = random.Random(MASTER_SEED)
    seen = [n for n in range(N_LAYOUTS) if layout_is_seen(n)]
    unseen = [n for n in range(N_LAYOUTS) if not layout_is_seen(n)]
    stats = {"infeasible": 0, "seen_in_train": 0, "expert_over_limit": 0}
    tasks = {"train": _build_split("train", rng, seen, set(), stats)}
    tasks["valid_seen"] = _build_split("valid_seen", rng, seen, {_combo(t) for t in tasks["train"]}, stats)
    tasks["valid_unseen"] = _build_split("valid_unseen", rng, unseen, set(), stats)
    return tasks, stats


def dumps(tasks: dict[str, list[dict]]) -> str:
    """The task list file's text: one compact JSON object per line, splits in order."""
    lines = [
        json.dumps({k: t[k] for k in _KEYS}, separators=(",", ":"), ensure_ascii=True)
        for split in SPLITS
        for t in tasks[split]
    ]
    return "\n".join(lines) + "\n"


def loads(text: str) -> dict[str, list[dict]]:
    """Parse the task list file's text into ``{split: [task line, ...]}``."""
    tasks: dict[str, list[dict]] = {s: [] for s in SPLITS}
    for line in text.splitlines():
        if line.strip():
            spec = json.loads(line)
            tasks[spec["id"].split("/")[0]].append(spec)
    return tasks


_TASKS: dict[str, list[dict]] | None = None


def load_tasks(path: Path | None = None) -> dict[str, list[dict]]:
    """The committed task list (cached); rebuilt from the master seed if the file is missing."""
    global _TASKS
    if path is not None:
        return loads(Path(path).read_text(encoding="utf-8"))
    if _TASKS is None:
        try:
            _TASKS = loads((paths.data_dir("household") / "tasks.jsonl").read_text(encoding="utf-8"))
        except FileNotFoundError:  # e.g. an installed wheel without data/: same tasks, built in a few seconds
            _TASKS = build_tasks()[0]
    return _TASKS
