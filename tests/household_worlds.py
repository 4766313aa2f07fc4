"""Hand-made worlds for the household tests."""

from __future__ import annotations

from rspo.core.envs.household.catalogue import HEAT_T
from rspo.core.envs.household.engine import Goal, World
from rspo.core.envs.household.world import Layout

SPLITS = ("train", "valid_seen", "valid_unseen")


def small_world(task_type=HEAT_T, obj="apple", recep="countertop", lamp=None, m=0.0, text="heat some apple."):
    """A hand-made kitchen: apple 1 in drawer 1 (closed), bread 1 and mug 1 on countertop 1."""
    layout = Layout(
        0,
        "kitchen",
        [
            ("countertop", 1),
            ("diningtable", 1),
            ("drawer", 1),
            ("fridge", 1),
            ("microwave", 1),
            ("sinkbasin", 1),
        ]
        + [("sidetable", 1)],
    )
    kinds = ["apple", "bread", "mug", "desklamp", "apple"]
    where = [2, 0, 0, 6, 3]  # drawer 1, countertop 1, countertop 1, sidetable 1, fridge 1
    return World(layout, kinds, where, Goal(task_type, obj, recep, lamp, text), m)


def run(w: World, actions):
    out = []
    for a in actions:
        out.append(w.step(a))
    return out
