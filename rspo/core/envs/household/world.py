"""Seeded household layouts (the "floorplans") and object placement.

A *layout* is a room: its kind and its receptacles, generated from a layout number alone
(:func:`get_layout`). A *task* places objects in that layout from its own seed
(:func:`place_objects`), so the same room hosts many tasks, as ALFRED scenes do.

Layout numbers ``0 .. N_LAYOUTS-1``: ``LAYOUTS_PER_ROOM`` per room kind, in the order of
:data:`~.catalogue.ROOMS`; within a room kind the first ``SEEN_PER_ROOM`` serve train and valid_seen,
the rest only valid_unseen ("layouts never seen in training").

Everything uses ``random.Random(seed)`` (never the global generator, never ``hash()`` of a string),
so a layout or task is rebuilt bit for bit on every machine.
"""

from __future__ import annotations

import random

from rspo.core.envs.household.catalogue import (
    LAMPS,
    MAX_OBJECTS,
    MAX_RECEPTACLES,
    MIN_OBJECTS,
    MIN_RECEPTACLES,
    OBJECTS,
    OPENABLE,
    PAD_KINDS,
    ROOM_RECEPTACLES,
    ROOMS,
)

LAYOUTS_PER_ROOM = 30
SEEN_PER_ROOM = 26
N_LAYOUTS = LAYOUTS_PER_ROOM * len(ROOMS)
_LAYOUT_SEED_BASE = 0x5EED0000


def layout_room(number: int) -> str:
    """The room kind of layout ``number``."""
    return ROOMS[number // LAYOUTS_PER_ROOM]


def layout_is_seen(number: int) -> bool:
    """Whether layout ``number`` belongs to the train / valid_seen pool (else valid_unseen only)."""
    return number % LAYOUTS_PER_ROOM < SEEN_PER_ROOM


def _article_list(names) -> str:
    """ALFWorld's list style: 'nothing', 'a x 1', 'a x 1, and a y 2', 'a x 1, a y 2, and a z 3'."""
    if not names:
        return "nothing"
    if len(names) == 1:
        return "a " + names[0]
    return ", ".join(["a " + n for n in names[:-1]]) + ", and a " + names[-1]


class Layout:
    """One room: receptacle names and kinds, with the strings the engine reuses every step.

    Attributes:
        number, room: the layout number and its room kind.
        receptacle_names, receptacle_kinds, openable: per receptacle (index ``r``): "cabinet 3", "cabinet", True.
        by_kind: receptacle kind -> indices of that kind.
        goto: "go to <name>" per receptacle; goto_map: that string -> index.
        goto_except: per location (``-1`` = middle of the room, stored last) the "go to" list
            without the current receptacle.
        room_line: "You are in the middle of a room. Looking quickly around you, you see ...".
    """

    __slots__ = (
        "number",
        "room",
        "receptacle_names",
        "receptacle_kinds",
        "openable",
        "by_kind",
        "goto",
        "goto_map",
        "goto_except",
        "room_line",
        "search_order",
    )

    def __init__(self, number: int, room: str, receptacles: list[tuple[str, int]]):
        self.number = number
        self.room = room
        self.receptacle_names = [f"{k} {i}" for k, i in receptacles]
        self.receptacle_kinds = [k for k, _ in receptacles]
        self.openable = [k in OPENABLE for k in self.receptacle_kinds]
        self.by_kind: dict[str, list[int]] = {}
        for r, k in enumerate(self.receptacle_kinds):
            self.by_kind.setdefault(k, []).append(r)
        self.goto = ["go to " + n for n in self.receptacle_names]
        self.goto_map = {g: r for r, g in enumerate(self.goto)}
        n = len(self.receptacle_names)
        self.goto_except = [self.goto[:r] + self.goto[r + 1 :] for r in range(n)] + [list(self.goto)]
        self.room_line = (
            "You are in the middle of a room. Looking quickly around you, you see "
            + _article_list(self.receptacle_names)
            + "."
        )
        self.search_order: dict[str, list[int]] = {}

    def order_for(self, kind: str) -> list[int]:
        """Receptacles in the order a sensible person searches them for ``kind``: by the chance of
        finding it there (the placement prior of the receptacle's kind shared among the receptacles
        of that kind) per step spent looking (1 for a surface, 2 for a container to open); kinds
        outside the prior last; ties: surfaces first, then by index."""
        order = self.search_order.get(kind)
        if order is None:
            prior = OBJECTS[kind][1]

            def key(r: int) -> tuple:
                k = self.receptacle_kinds[r]
                value = prior.get(k, 0) / len(self.by_kind[k]) / (2 if self.openable[r] else 1)
                return (-value, self.openable[r], r)

            order = sorted(range(len(self.receptacle_names)), key=key)
            self.search_order[kind] = order
        return order


def _make_layout(number: int) -> Layout:
    room = layout_room(number)
    rng = random.Random(_LAYOUT_SEED_BASE + number)
    counts = {kind: rng.randint(lo, hi) for kind, lo, hi in ROOM_RECEPTACLES[room]}
    pad = PAD_KINDS[room]
    while sum(counts.values()) < MIN_RECEPTACLES:
        counts[rng.choice(pad)] += 1
    while sum(counts.values()) > MAX_RECEPTACLES:
        kind = rng.choice(pad)
        if counts[kind] > 1:
            counts[kind] -= 1
    receptacles = [(kind, i) for kind in sorted(counts) for i in range(1, counts[kind] + 1)]
    return Layout(number, room, receptacles)


_LAYOUT_CACHE: dict[int, Layout] = {}


def get_layout(number: int) -> Layout:
    """Layout ``number`` (cached; layouts are immutable)."""
    layout = _LAYOUT_CACHE.get(number)
    if layout is None:
        if not isinstance(number, int) or not 0 <= number < N_LAYOUTS:
            raise ValueError(f"layout number must be in 0..{N_LAYOUTS - 1}, got {number!r}")
        layout = _LAYOUT_CACHE[number] = _make_layout(number)
    return layout


def room_object_kinds(layout: Layout) -> list[str]:
    """Object kinds that appear in this layout's room kind and have a prior receptacle present."""
    return [
        kind
        for kind, (rooms, prior) in OBJECTS.items()
        if layout.room in rooms and any(k in layout.by_kind for k in prior)
    ]


def placement_kinds(layout: Layout, kind: str, exclude: str | None = None) -> list[str]:
    """Receptacle kinds present in ``layout`` where ``kind`` may be placed (prior weight > 0)."""
    return [k for k in OBJECTS[kind][1] if k in layout.by_kind and k != exclude]


def place_objects(
    layout: Layout, seed: int, target: str, two: bool, lamp: str | None, avoid: str | None
) -> tuple[list[str], list[int]]:
    """Objects of one task: ``(kinds, receptacle index of each)``, generated from ``seed``.

    1-2 objects of kind ``target`` (2-3 when ``two``), never placed in a receptacle of kind ``avoid``
    (so a placement goal does not hold from the start); in living rooms and bedrooms one or two lamps
    (always including ``lamp`` when given); then random other objects of the room up to a total of
    MIN_OBJECTS..MAX_OBJECTS (at most 4 of a kind). Each object goes to a receptacle kind drawn from
    its placement prior (over the kinds present), then to a random receptacle of that kind.
    """
    rng = random.Random(seed)
    n_target = rng.randint(2, 3) if two else rng.randint(1, 2)
    lamps: list[str] = []
    if layout.room in ("livingroom", "bedroom"):
        if lamp is not None:
            lamps = [lamp] + ([k for k in sorted(LAMPS) if k != lamp] if rng.random() < 0.25 else [])
        else:
            lamps = rng.choice((["desklamp"], ["floorlamp"], ["desklamp", "floorlamp"]))
        lamps = [k for k in lamps if placement_kinds(layout, k)]
    pool = [k for k in room_object_kinds(layout) if k != target and k not in LAMPS]
    total = rng.randint(MIN_OBJECTS, min(MAX_OBJECTS, MIN_OBJECTS + 2 * len(layout.receptacle_names)))
    kinds = [target] * n_target + lamps
    total = min(total, len(kinds) + 4 * len(pool))
    per_kind: dict[str, int] = {}
    while len(kinds) < total:
        kind = rng.choice(pool)
        if per_kind.get(kind, 0) < 4:
            per_kind[kind] = per_kind.get(kind, 0) + 1
            kinds.append(kind)
    rng.shuffle(kinds)
    where = []
    for kind in kinds:
        prior = OBJECTS[kind][1]
        options = placement_kinds(layout, kind, avoid if kind == target else None)
        rkind = rng.choices(options, weights=[prior[k] for k in options])[0]
        where.append(rng.choice(layout.by_kind[rkind]))
    return kinds, where
