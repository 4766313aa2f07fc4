"""Household against the real ALFWorld engine, step by step (docs/alfworld-parity.md).

Each household task is exported (:mod:`.export`) and played in both worlds with the same commands:
the household expert's plan (``mode="expert"``), or a seeded random walk over the commands that both
worlds admit (``mode="random"``). At every step the two observations and the two admissible lists are
compared, and each difference is put in one of the explained classes of :data:`EXPLAINED` or, when
none fits, kept as unexplained (the parity test fails on any).

    python -m rspo.core.envs.alfworld.parity --split valid_seen --per-type 10 --out /tmp/parity

prints the counts that docs/alfworld-parity.md reports.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import re
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from rspo.core.envs.household.expert import expert_action
from rspo.core.envs.household.tasks import build_world

#: explained difference classes -> the reason (docs/alfworld-parity.md says more)
EXPLAINED = {
    "list_order": "ALFWorld lists receptacles and objects in the sorted order of their PDDL ids "
    "(a kind's highest number first); household lists them in layout / placement order",
    "help": "ALFWorld admits `help` (its grammar's command list); household has no help command",
    "use_lit_lamp": "ALFWorld's `use` toggles a lamp, so a lit lamp can be used again (turned off); "
    "household admits `use` only for a lamp that is off",
    "clean_bathtub": "ALFWorld's CleanObject needs a SinkBasinType receptacle; household also "
    "cleans in a bathtubbasin (admitted by household only; when the household expert cleans there, "
    "ALFWorld answers 'Nothing happens.' and the two worlds part: the comparison of that task stops)",
    "cold_word": "ALFWorld examines a cooled object as `cold`, household as `cool`",
    "look_middle": "`look` in the middle of the room: ALFWorld's grammar lists the receptacles at the "
    "agent's location (there are none: 'you see nothing'); household repeats the room's receptacle list",
}
NOTHING = "Nothing happens."
_MIDDLE = "You are in the middle of a room. Looking quickly around you, you see "

_LIST = re.compile(r"(you see |Looking quickly around you, you see )(.*?)(\.$|\.\n)", re.S)


def _items_sorted(text: str) -> str:
    """``text`` with every "you see a x, a y, and a z." list in sorted item order."""

    def fix(m):
        items = [i.strip() for i in re.split(r", and |, | and ", m.group(2)) if i.strip()]
        items = sorted(i[2:] if i.startswith("a ") else i for i in items)
        listed = (
            "a " + items[0]
            if len(items) == 1
            else ", ".join("a " + i for i in items[:-1]) + ", and a " + items[-1]
        )
        return m.group(1) + (listed if items and items != ["nothing"] else "nothing") + m.group(3)

    return _LIST.sub(fix, text)


def classify_obs(household: str, alfworld: str) -> str | None:
    """None if the observations agree; else the class of their difference ("other" if unexplained)."""
    if household == alfworld:
        return None
    if _items_sorted(household) == _items_sorted(alfworld):
        return "list_order"
    if household.replace("This is a cool ", "This is a cold ") == alfworld:
        return "cold_word"
    if household.startswith(_MIDDLE) and alfworld == _MIDDLE + "nothing.":
        return "look_middle"
    if (
        household.startswith("You clean the ")
        and " using the bathtubbasin " in household
        and alfworld == NOTHING
    ):
        return "clean_bathtub"
    return "other"


def classify_command(command: str, only_in: str, lamp_on: bool) -> str:
    """The class of a command admitted by one world only (``only_in``: "household" or "alfworld")."""
    if only_in == "alfworld" and command == "help":
        return "help"
    if only_in == "alfworld" and command.startswith("use ") and lamp_on:
        return "use_lit_lamp"
    if only_in == "household" and command.startswith("clean ") and " with bathtubbasin " in command:
        return "clean_bathtub"
    return "other"


def compare(spec: dict, root: Path, mode: str = "expert", steps: int = 30, seed: int = 0) -> dict:
    """Play one household task in both worlds; the record of every difference."""
    from rspo.core.envs.alfworld.engine import load_game
    from rspo.core.envs.alfworld.export import export_task

    path = export_task(spec, root)
    engine = load_game(path)
    state = engine.reset()
    world = build_world(spec)
    rng = random.Random(seed)
    counts: Counter = Counter()
    unexplained: list[dict] = []
    diverged = None

    def check_obs(command, h_obs, a_obs):
        kind = classify_obs(h_obs, a_obs)
        counts["obs_steps"] += 1
        counts["obs_equal"] += kind is None
        if kind == "other":
            unexplained.append({"command": command, "household": h_obs, "alfworld": a_obs})
        elif kind:
            counts["obs:" + kind] += 1
        return kind

    def check_admissible():
        h, a = world.admissible(), list(state["admissible_commands"])
        counts["adm_steps"] += 1
        counts["adm_equal_sets"] += set(h) == set(a)
        counts["adm_equal_order"] += h == a
        counts["adm_equal_sets_but_help"] += set(h) == set(a) - {"help"}
        lamp_on = any(world.lamp_on)
        for only_in, cmds in (("household", set(h) - set(a)), ("alfworld", set(a) - set(h))):
            for c in sorted(cmds):
                kind = classify_command(c, only_in, lamp_on)
                if kind == "other":
                    unexplained.append({"admissible_only_in": only_in, "command": c})
                else:
                    counts["adm:" + kind] += 1
        return h, a

    check_obs("<reset>", world.obs, state["feedback"])
    for _ in range(steps if mode == "random" else 100):
        h, a = check_admissible()
        if world.won:
            break
        if mode == "expert":
            command = expert_action(world)
        else:
            both = sorted(set(h) & set(a))
            command = rng.choice(both)
        h_obs = world.step(command)[0]
        state, _, _ = engine.step(command)
        if check_obs(command, h_obs, state["feedback"]) == "clean_bathtub":
            diverged = command  # the worlds differ from here on (household's object is clean)
            break
        if world.won != bool(state["won"]):
            unexplained.append(
                {"command": command, "won": {"household": world.won, "alfworld": state["won"]}}
            )
    return {
        "task_id": spec["id"],
        "type": spec["type"],
        "mode": mode,
        "household_won": world.won,
        "alfworld_won": bool(state["won"]),
        "diverged": diverged,
        "counts": dict(counts),
        "unexplained": unexplained,
    }


def _compare_modes(job) -> list[dict]:
    spec, root, modes, steps = job
    return [compare(spec, root, mode, steps) for mode in modes]


def run(specs, root: Path, modes=("expert",), steps: int = 30, workers: int = 1) -> dict:
    """Compare every task in every mode; totals, per-type wins and all unexplained differences.
    ``workers`` > 1 plays the tasks in that many processes (the same records, in the same order; a
    task's modes stay in one process, which alone writes its game)."""
    jobs = [(spec, root, tuple(modes), steps) for spec in specs]
    if workers > 1 and len(jobs) > 1:
        context = multiprocessing.get_context("spawn")  # the caller may hold torch's threads
        with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=context) as pool:
            records = [r for done in pool.map(_compare_modes, jobs) for r in done]
    else:
        records = [r for job in jobs for r in _compare_modes(job)]
    totals: Counter = Counter()
    for r in records:
        totals.update(r["counts"])
    expert = [r for r in records if r["mode"] == "expert"]
    per_type: dict[str, list[int]] = {}
    for r in expert:
        won = per_type.setdefault(r["type"], [0, 0])
        won[0] += r["alfworld_won"]
        won[1] += 1
    return {
        "tasks": len({r["task_id"] for r in records}),
        "expert_wins_in_alfworld": sum(r["alfworld_won"] for r in expert),
        "expert_runs": len(expert),
        "expert_diverged": [r["task_id"] for r in expert if r["diverged"]],
        "per_type_wins": per_type,
        "totals": dict(sorted(totals.items())),
        "unexplained": [
            dict(u, task_id=r["task_id"], mode=r["mode"]) for r in records for u in r["unexplained"]
        ],
    }


def main(argv=None) -> None:
    from rspo.core.envs.alfworld.export import select

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--split", default="valid_seen")
    p.add_argument("--per-type", type=int, default=10)
    p.add_argument("--modes", default="expert,random")
    p.add_argument("--steps", type=int, default=30, help="random-walk length")
    p.add_argument("--out", default=None, help="folder for the exported games (default: a temporary one)")
    p.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="processes (default: one per core)"
    )
    args = p.parse_args(argv)
    specs = select(args.split, per_type=args.per_type)
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        report = run(specs, Path(args.out or tmp), tuple(args.modes.split(",")), args.steps, args.workers)
    report["seconds"] = round(time.time() - start, 1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
