"""Household tasks exported to ALFWorld: a PDDL problem and a game file for the ``alfworld`` package's
own domain (``alfred.pddl``) and grammar (``alfred.twl2``), played offline in its text engine.

One exported task is a folder laid out as ALFWorld's ``json_2.1.1`` data is::

    <root>/<split>/<task_type>-<Obj>-None-<Recep>-<layout>/trial_<split>_<index>/
        game.tw-pddl     {"pddl_domain", "grammar", "pddl_problem", "solvable", "walkthrough"}
        traj_data.json   {"task_type", "pddl_params", "task_id", "turk_annotations"}

so :class:`~rspo.core.envs.alfworld.AlfworldEnv` (``data=<root>``) and ALFWorld's own handcoded expert
(which reads ``traj_data.json`` beside the game) read it like the downloaded data.

How a household world becomes a problem (``docs/alfworld-parity.md`` lists what differs and why):

- each receptacle is a ``receptacle`` at its own ``location``; the agent starts at one more location
  that holds no receptacle (the middle of the room);
- entity ids are chosen so that ALFWorld's name demangler (``AlfredDemangler``) gives each entity the
  household name: ``apple 2`` is ``apple_bar_098``, ``sinkbasin 1`` is ``sink_bar_099_bar_sinkbasin``
  (the demangler numbers the sorted ids of a kind from the highest down, and appends ``basin`` to ids
  holding it);
- object properties follow the household rules (``heatable``, ``coolable``, ``cleanable`` from the
  household catalogue, lamps ``toggleable`` and not ``pickupable``), receptacles of the household's
  openable kinds are ``openable``, and every receptacle type can contain every object type (household
  lets anything be put anywhere);
- the goal is ALFWorld's goal for the task type (``alfworld.gen.goal_library``), with the household
  kinds as ALFRED types; the instruction replaces the grammar's ``UNKNOWN GOAL``.

    >>> from rspo.core.envs.alfworld.export import export_tasks
    >>> paths = export_tasks("/tmp/hh-alfworld", "valid_seen", limit=6)  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from rspo.core.envs.household.catalogue import (
    CLEAN_T,
    CLEANABLE,
    COOL_T,
    COOLABLE,
    HEAT_T,
    HEATABLE,
    LAMPS,
    LOOK,
    OPENABLE,
    SIMPLE,
    TWO,
)
from rspo.core.envs.household.engine import World

AGENT = "agent1"
START = "loc_bar_start"

#: household kind -> ALFRED type name (``alfworld.gen.constants.OBJECTS`` spelling)
_CAMEL_EXCEPTIONS = {
    "alarmclock": "AlarmClock",
    "armchair": "ArmChair",
    "bathtubbasin": "BathtubBasin",
    "butterknife": "ButterKnife",
    "cd": "CD",
    "cellphone": "CellPhone",
    "coffeemachine": "CoffeeMachine",
    "coffeetable": "CoffeeTable",
    "countertop": "CounterTop",
    "creditcard": "CreditCard",
    "desklamp": "DeskLamp",
    "diningtable": "DiningTable",
    "dishsponge": "DishSponge",
    "floorlamp": "FloorLamp",
    "garbagecan": "GarbageCan",
    "handtowel": "HandTowel",
    "handtowelholder": "HandTowelHolder",
    "keychain": "KeyChain",
    "laundryhamper": "LaundryHamper",
    "papertowelroll": "PaperTowelRoll",
    "peppershaker": "PepperShaker",
    "remotecontrol": "RemoteControl",
    "saltshaker": "SaltShaker",
    "sidetable": "SideTable",
    "sinkbasin": "SinkBasin",
    "soapbar": "SoapBar",
    "soapbottle": "SoapBottle",
    "spraybottle": "SprayBottle",
    "stoveburner": "StoveBurner",
    "tissuebox": "TissueBox",
    "toiletpaper": "ToiletPaper",
    "toiletpaperhanger": "ToiletPaperHanger",
    "towelholder": "TowelHolder",
    "tvstand": "TVStand",
    "winebottle": "WineBottle",
}


def alfred_type(kind: str) -> str:
    """The ALFRED type name of a household kind: ``"countertop"`` -> ``"CounterTop"``."""
    return _CAMEL_EXCEPTIONS.get(kind, kind.capitalize())


def entity_id(name: str) -> str:
    """The PDDL id that ALFWorld's demangler turns back into household name ``name`` ("cabinet 3")."""
    kind, number = name.rsplit(" ", 1)
    suffix = f"{100 - int(number):03d}"  # the demangler numbers a kind's sorted ids from the top down
    if kind.endswith("basin"):  # it appends "basin" to the name of an id holding "basin"
        return f"{kind[: -len('basin')]}_bar_{suffix}_bar_{kind}"
    return f"{kind}_bar_{suffix}"


def domain_and_grammar() -> tuple[str, str]:
    """The text of the ``alfworld`` package's own ``alfred.pddl`` and ``alfred.twl2``."""
    from importlib.util import find_spec

    spec = find_spec("alfworld")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the alfworld package is not installed: pip install -e .[alfworld]")
    data = Path(list(spec.submodule_search_locations)[0]) / "data"
    return (data / "alfred.pddl").read_text(), (data / "alfred.twl2").read_text()


def _goal(world: World) -> str:
    """ALFWorld's goal for the household goal (the structure of ``alfworld.gen.goal_library``)."""
    g = world.goal
    obj = alfred_type(g.obj) + "Type"
    if g.type == LOOK:
        lamp = alfred_type(g.lamp) + "Type"
        return (
            "(and (exists (?ot - object ?r - receptacle ?a - agent ?l - location) (and "
            f"(objectType ?ot {lamp}) (toggleable ?ot) (isToggled ?ot) (receptacleAtLocation ?r ?l) "
            "(atLocation ?a ?l) (inReceptacle ?ot ?r))) "
            f"(exists (?o - object ?a - agent) (and (objectType ?o {obj}) (holds ?a ?o))))"
        )
    recep = alfred_type(g.recep) + "Type"
    if g.type == TWO:
        return (
            "(and (exists (?r - receptacle) (exists (?o1 - object) (and "
            f"(objectType ?o1 {obj}) (receptacleType ?r {recep}) (inReceptacle ?o1 ?r) "
            "(exists (?o2 - object) (and (not (= ?o1 ?o2)) "
            f"(objectType ?o2 {obj}) (receptacleType ?r {recep}) (inReceptacle ?o2 ?r)))))))"
        )
    state = {SIMPLE: "", CLEAN_T: "cleanable isClean", HEAT_T: "heatable isHot", COOL_T: "coolable isCool"}
    words = state[g.type].split()
    able = f"({words[0]} ?o) " if words else ""
    done = f"({words[1]} ?o) " if words else ""
    return (
        "(and (exists (?r - receptacle) (exists (?o - object) (and "
        f"{able}(objectType ?o {obj}) (receptacleType ?r {recep}) {done}(inReceptacle ?o ?r)))))"
    )


def problem(world: World, name: str = "household") -> str:
    """The PDDL problem of a household world in its current state (normally the initial one)."""
    L = world.layout
    receps = [entity_id(n) for n in L.receptacle_names]
    objs = [entity_id(n) for n in world.object_names]
    locs = [f"loc_bar_{r}" for r in range(len(receps))]
    otypes = sorted({alfred_type(k) + "Type" for k in world.object_kinds})
    rtypes = sorted({alfred_type(k) + "Type" for k in L.receptacle_kinds})
    decl = [f"{AGENT} - agent", f"{START} - location"]
    decl += [f"{t} - otype" for t in otypes] + [f"{t} - rtype" for t in rtypes]
    decl += [f"{o} - object" for o in objs] + [f"{r} - receptacle" for r in receps]
    decl += [f"{loc} - location" for loc in locs]
    here = START if world.loc < 0 else locs[world.loc]
    init = [f"(atLocation {AGENT} {here})"]
    for r, rid in enumerate(receps):
        init.append(f"(receptacleAtLocation {rid} {locs[r]})")
        init.append(f"(receptacleType {rid} {alfred_type(L.receptacle_kinds[r])}Type)")
        if L.receptacle_kinds[r] in OPENABLE:
            init.append(f"(openable {rid})")
            if world.is_open[r]:
                init.append(f"(opened {rid})")
    for o, oid in enumerate(objs):
        kind = world.object_kinds[o]
        init.append(f"(objectType {oid} {alfred_type(kind)}Type)")
        r = world.where[o]
        if r >= 0:
            init.append(f"(inReceptacle {oid} {receps[r]})")
            init.append(f"(objectAtLocation {oid} {locs[r]})")
        else:
            init += [f"(holds {AGENT} {oid})", f"(holdsAny {AGENT})"]
        if kind in LAMPS:
            init.append(f"(toggleable {oid})")
            if world.lamp_on[o]:
                init += [f"(isOn {oid})", f"(isToggled {oid})"]
            continue
        init.append(f"(pickupable {oid})")
        for flag_set, pred in ((HEATABLE, "heatable"), (COOLABLE, "coolable"), (CLEANABLE, "cleanable")):
            if kind in flag_set:
                init.append(f"({pred} {oid})")
        for bit, pred in ((1, "isHot"), (2, "isCool"), (4, "isClean")):
            if world.flags[o] & bit:
                init.append(f"({pred} {oid})")
    init += [f"(canContain {rt} {ot})" for rt in rtypes for ot in otypes]
    return (
        f"(define (problem {name})\n(:domain alfred)\n(:objects\n  "
        + "\n  ".join(decl)
        + "\n)\n(:init\n  "
        + "\n  ".join(init)
        + f"\n)\n(:goal {_goal(world)})\n)\n"
    )


def traj_data(spec: dict) -> dict:
    """The ``traj_data.json`` of a task: what ALFWorld's handcoded expert reads (``pddl_params``)."""
    return {
        "task_type": spec["type"],
        "task_id": spec["id"],
        "pddl_params": {
            "object_target": alfred_type(spec["obj"]),
            "parent_target": alfred_type(spec["recep"]) if spec["recep"] else "",
            "toggle_target": alfred_type(spec["lamp"]) if spec["lamp"] else "",
            "mrecep_target": "",
            "object_sliced": False,
        },
        "turk_annotations": {"anns": [{"task_desc": spec["task"]}]},
    }


def game(spec: dict, walkthrough: bool = True) -> dict:
    """The ``game.tw-pddl`` content of a household task (a task line of ``data/household/tasks.jsonl``)."""
    from rspo.core.envs.household.expert import expert_action
    from rspo.core.envs.household.tasks import build_world

    domain, grammar = domain_and_grammar()
    world = build_world(spec)
    text = world.goal.text.rstrip(".")
    data = {
        "pddl_domain": domain,
        "grammar": grammar.replace("UNKNOWN GOAL", text),
        "pddl_problem": problem(world, "household_" + spec["id"].replace("/", "_")),
        "solvable": True,
    }
    if walkthrough:  # the household expert's plan from the initial state
        plan = []
        while not world.won and len(plan) < 100:
            plan.append(expert_action(world))
            world.step(plan[-1])
        data["walkthrough"] = plan
    return data


def task_dir(spec: dict) -> str:
    """The folder of a task below the split, named as ALFWorld names its trials."""
    split, index = spec["id"].split("/")
    target = alfred_type(spec["recep"] or spec["lamp"])
    return f"{spec['type']}-{alfred_type(spec['obj'])}-None-{target}-{spec['layout']}/trial_{split}_{index}"


def export_task(spec: dict, root: str | Path) -> Path:
    """Write one task's ``game.tw-pddl`` and ``traj_data.json``; return the game file's path."""
    folder = Path(root) / spec["id"].split("/")[0] / task_dir(spec)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "traj_data.json").write_text(json.dumps(traj_data(spec), indent=1))
    path = folder / "game.tw-pddl"
    path.write_text(json.dumps(game(spec)))
    return path


def select(split: str, per_type: int | None = None, limit: int | None = None) -> list[dict]:
    """Household task lines of ``split``: the first ``per_type`` of each task type (all if None),
    then the first ``limit`` of those, in split order."""
    from rspo.core.envs.household.tasks import load_tasks

    tasks = load_tasks()[split]
    if per_type is not None:
        counts: dict[str, int] = {}
        chosen = []
        for t in tasks:
            if counts.get(t["type"], 0) < per_type:
                counts[t["type"]] = counts.get(t["type"], 0) + 1
                chosen.append(t)
        tasks = chosen
    return tasks[:limit] if limit is not None else tasks


def export_tasks(
    root: str | Path, split: str = "valid_seen", per_type: int | None = None, limit: int | None = None
) -> list[Path]:
    """Export household tasks of ``split`` (see :func:`select`) under ``root``; the game files' paths."""
    return [export_task(spec, root) for spec in select(split, per_type, limit)]


def export_specs(specs: Iterable[dict], root: str | Path) -> list[Path]:
    """Export the given household task lines under ``root``."""
    return [export_task(spec, root) for spec in specs]


def main(argv=None) -> None:
    """``python -m rspo.core.envs.alfworld.export OUT [--split valid_seen] [--per-type N]``: export, then play
    with ``AlfworldEnv(split=..., data=OUT)``."""
    import argparse

    p = argparse.ArgumentParser(
        description="Export household tasks as ALFWorld games (needs the alfworld extra)."
    )
    p.add_argument("out")
    p.add_argument("--split", default="valid_seen", choices=("train", "valid_seen", "valid_unseen"))
    p.add_argument("--per-type", type=int, default=None, help="the first N tasks of each type (default: all)")
    args = p.parse_args(argv)
    paths = export_tasks(args.out, args.split, per_type=args.per_type)
    print(
        f"{len(paths)} games under {Path(args.out) / args.split}; AlfworldEnv(split={args.split!r}, data={args.out!r})"
    )


if __name__ == "__main__":
    main()
