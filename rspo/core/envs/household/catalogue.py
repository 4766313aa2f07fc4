"""The household world's vocabulary: rooms, receptacles, objects, placement priors and task types.

Names follow ALFWorld (lower-case ALFRED types: ``countertop``, ``sinkbasin``, ``alarmclock``, ...).
Everything here is plain data; :mod:`.world` turns it into seeded layouts and :mod:`.tasks` into
task lists.
"""

from __future__ import annotations

ROOMS = ("kitchen", "livingroom", "bedroom", "bathroom")

#: Receptacle kinds that must be opened before their contents can be seen, taken or added to.
OPENABLE = frozenset({"cabinet", "drawer", "fridge", "microwave", "safe"})

#: Per room: (receptacle kind, fewest, most) instances; then the kinds used to pad a layout to
#: :data:`MIN_RECEPTACLES`. Layouts hold between MIN_RECEPTACLES and MAX_RECEPTACLES receptacles.
ROOM_RECEPTACLES: dict[str, tuple[tuple[str, int, int], ...]] = {
    "kitchen": (
        ("cabinet", 4, 12),
        ("coffeemachine", 1, 1),
        ("countertop", 1, 3),
        ("diningtable", 0, 2),
        ("drawer", 2, 10),
        ("fridge", 1, 1),
        ("garbagecan", 1, 1),
        ("microwave", 1, 1),
        ("shelf", 0, 3),
        ("sinkbasin", 1, 1),
        ("stoveburner", 2, 4),
        ("toaster", 1, 1),
    ),
    "livingroom": (
        ("armchair", 0, 2),
        ("cabinet", 0, 4),
        ("coffeetable", 1, 2),
        ("diningtable", 0, 1),
        ("drawer", 1, 6),
        ("dresser", 0, 1),
        ("garbagecan", 1, 1),
        ("safe", 0, 1),
        ("shelf", 2, 6),
        ("sidetable", 1, 3),
        ("sofa", 1, 2),
        ("tvstand", 1, 1),
    ),
    "bedroom": (
        ("armchair", 0, 1),
        ("bed", 1, 1),
        ("cabinet", 0, 2),
        ("desk", 0, 2),
        ("drawer", 2, 8),
        ("dresser", 1, 1),
        ("garbagecan", 1, 1),
        ("laundryhamper", 0, 1),
        ("safe", 0, 1),
        ("shelf", 1, 6),
        ("sidetable", 1, 2),
    ),
    "bathroom": (
        ("bathtubbasin", 0, 1),
        ("cabinet", 2, 4),
        ("countertop", 1, 1),
        ("drawer", 0, 4),
        ("garbagecan", 1, 1),
        ("handtowelholder", 0, 2),
        ("shelf", 0, 3),
        ("sinkbasin", 1, 2),
        ("toilet", 1, 1),
        ("toiletpaperhanger", 1, 1),
        ("towelholder", 1, 2),
    ),
}
PAD_KINDS = {
    "kitchen": ("cabinet", "drawer"),
    "livingroom": ("drawer", "shelf", "cabinet"),
    "bedroom": ("drawer", "shelf"),
    "bathroom": ("cabinet", "drawer", "shelf"),
}
MIN_RECEPTACLES, MAX_RECEPTACLES = 15, 40
MIN_OBJECTS, MAX_OBJECTS = 20, 60

# Placement priors: object kind -> {receptacle kind: weight}. Objects are placed by these weights
# (over the kinds present in the layout), and the expert searches receptacles in the same order of
# likelihood, like a person who knows where apples usually are.
_FOOD_PRIOR = {
    "fridge": 4,
    "countertop": 3,
    "diningtable": 3,
    "microwave": 1,
    "garbagecan": 1,
    "sinkbasin": 1,
}
_DISH_PRIOR = {
    "cabinet": 4,
    "countertop": 2,
    "diningtable": 2,
    "fridge": 1,
    "microwave": 1,
    "sinkbasin": 1,
    "shelf": 1,
}
_UTENSIL_PRIOR = {"drawer": 5, "countertop": 3, "diningtable": 2, "sinkbasin": 1}
_SMALL_PRIOR = {
    "sidetable": 3,
    "desk": 3,
    "bed": 2,
    "dresser": 2,
    "drawer": 2,
    "diningtable": 2,
    "coffeetable": 2,
    "sofa": 2,
    "countertop": 1,
    "shelf": 1,
    "armchair": 1,
}
_PEN_PRIOR = {"desk": 3, "drawer": 3, "sidetable": 2, "shelf": 1, "dresser": 1, "coffeetable": 1}
_DECOR_PRIOR = {"shelf": 3, "coffeetable": 2, "sidetable": 2, "dresser": 2, "diningtable": 1, "tvstand": 1}

K, LR, B, BA = ("kitchen",), ("livingroom",), ("bedroom",), ("bathroom",)
#: object kind -> (rooms it appears in, placement prior)
OBJECTS: dict[str, tuple[tuple[str, ...], dict[str, int]]] = {
    **{k: (K, _FOOD_PRIOR) for k in ("apple", "bread", "tomato", "lettuce", "potato", "egg")},
    "mug": (
        K + B,
        {"coffeemachine": 3, "cabinet": 3, "desk": 3, "countertop": 2, "diningtable": 2, "shelf": 1}
        | {"sidetable": 1, "sinkbasin": 1, "microwave": 1, "fridge": 1},
    ),
    "cup": (K, _DISH_PRIOR),
    "plate": (K, _DISH_PRIOR),
    "bowl": (K, _DISH_PRIOR),
    "pan": (K, {"stoveburner": 4, "cabinet": 3, "countertop": 1, "sinkbasin": 1, "diningtable": 1}),
    "pot": (K, {"stoveburner": 4, "cabinet": 3, "countertop": 1, "sinkbasin": 1, "fridge": 1}),
    "kettle": (K, {"stoveburner": 3, "countertop": 2, "cabinet": 2, "diningtable": 1}),
    **{k: (K, _UTENSIL_PRIOR) for k in ("knife", "butterknife", "spatula", "spoon", "fork", "ladle")},
    "dishsponge": (K, {"sinkbasin": 3, "countertop": 2, "cabinet": 1, "drawer": 1, "diningtable": 1}),
    "saltshaker": (K, {"countertop": 3, "cabinet": 3, "diningtable": 2, "drawer": 1, "shelf": 1}),
    "peppershaker": (K, {"countertop": 3, "cabinet": 3, "diningtable": 2, "drawer": 1, "shelf": 1}),
    "winebottle": (K, {"countertop": 2, "fridge": 2, "cabinet": 2, "diningtable": 2, "shelf": 1}),
    "papertowelroll": (K, {"countertop": 3, "diningtable": 2, "cabinet": 1}),
    "soapbottle": (
        K + BA,
        {"countertop": 3, "toilet": 2, "cabinet": 2, "sinkbasin": 1, "shelf": 1, "bathtubbasin": 1},
    ),
    "spraybottle": (K + BA, {"cabinet": 3, "countertop": 2, "toilet": 2, "shelf": 1, "garbagecan": 1}),
    "cellphone": (K + LR + B, _SMALL_PRIOR),
    "creditcard": (K + LR + B, _SMALL_PRIOR | {"safe": 1}),
    "keychain": (LR + B, _SMALL_PRIOR | {"safe": 1}),
    "alarmclock": (B, {"desk": 3, "dresser": 3, "sidetable": 3, "shelf": 2}),
    "book": (
        LR + B,
        {"desk": 3, "bed": 3, "shelf": 3, "sidetable": 2, "coffeetable": 2, "drawer": 1, "sofa": 1},
    ),
    "cd": (
        LR + B,
        {"drawer": 3, "desk": 2, "shelf": 2, "safe": 2, "sidetable": 1, "dresser": 1, "garbagecan": 1},
    ),
    "pen": (LR + B, _PEN_PRIOR),
    "pencil": (LR + B, _PEN_PRIOR),
    "pillow": (LR + B, {"bed": 4, "sofa": 4, "armchair": 2}),
    "remotecontrol": (
        LR,
        {"sofa": 3, "coffeetable": 3, "armchair": 2, "sidetable": 2, "tvstand": 2, "dresser": 1},
    ),
    "laptop": (LR + B, {"bed": 3, "desk": 3, "sofa": 2, "coffeetable": 2, "diningtable": 1, "dresser": 1}),
    "box": (LR, {"sofa": 2, "coffeetable": 2, "dresser": 2, "shelf": 2, "sidetable": 2, "cabinet": 1}),
    "vase": (LR, _DECOR_PRIOR | {"cabinet": 1}),
    "statue": (LR + B, _DECOR_PRIOR | {"desk": 1}),
    "watch": (LR + B, {"dresser": 3, "sidetable": 2, "drawer": 2, "safe": 2, "shelf": 1, "coffeetable": 1}),
    "newspaper": (
        LR,
        {"sofa": 3, "coffeetable": 3, "sidetable": 2, "armchair": 2, "diningtable": 1, "garbagecan": 1},
    ),
    "tissuebox": (LR + B + BA, {"coffeetable": 2, "sidetable": 2, "dresser": 2, "shelf": 2, "toilet": 2}),
    "soapbar": (
        BA,
        {"countertop": 3, "bathtubbasin": 2, "sinkbasin": 2, "toilet": 2, "cabinet": 2, "garbagecan": 1},
    ),
    "towel": (BA, {"towelholder": 5, "bathtubbasin": 1, "countertop": 1}),
    "handtowel": (BA, {"handtowelholder": 5, "countertop": 1}),
    "cloth": (
        BA + B,
        {"cabinet": 3, "drawer": 2, "countertop": 2, "bathtubbasin": 1, "sinkbasin": 1, "toilet": 1}
        | {"laundryhamper": 2},
    ),
    "candle": (
        LR + BA,
        {"countertop": 3, "toilet": 2, "cabinet": 2, "shelf": 2, "bathtubbasin": 1, "sidetable": 1},
    ),
    "toiletpaper": (
        BA,
        {"toiletpaperhanger": 4, "toilet": 2, "cabinet": 2, "countertop": 1, "garbagecan": 1},
    ),
    # lamps: objects that stand on receptacles, cannot be taken, and are switched on with `use`
    "desklamp": (LR + B, {"desk": 3, "sidetable": 3, "dresser": 2, "shelf": 1}),
    "floorlamp": (LR + B, {"sidetable": 2, "dresser": 1, "desk": 1, "coffeetable": 1}),
}
del K, LR, B, BA

LAMPS = frozenset({"desklamp", "floorlamp"})
FOOD = frozenset({"apple", "bread", "tomato", "lettuce", "potato", "egg"})
DISHES = frozenset({"mug", "cup", "plate", "bowl", "pan", "pot", "kettle"})
UTENSILS = frozenset({"knife", "butterknife", "spatula", "spoon", "fork", "ladle"})
HEATABLE = FOOD | DISHES
COOLABLE = FOOD | DISHES | {"winebottle"}
CLEANABLE = FOOD | DISHES | UTENSILS | {"cloth", "dishsponge", "soapbar", "towel", "handtowel"}

#: Object state flags (bit masks) set by heat / cool / clean.
HOT, COOL, CLEAN = 1, 2, 4
STATE_WORDS = ((HOT, "hot"), (COOL, "cool"), (CLEAN, "clean"))

#: transform -> (state flag, appliance receptacle kinds, objects it applies to)
TRANSFORMS = {
    "heat": (HOT, ("microwave",), HEATABLE),
    "cool": (COOL, ("fridge",), COOLABLE),
    "clean": (CLEAN, ("sinkbasin", "bathtubbasin"), CLEANABLE),
}

# --- task types (ALFWorld's six) ----------------------------------------------------------------
SIMPLE = "pick_and_place_simple"
LOOK = "look_at_obj_in_light"
CLEAN_T = "pick_clean_then_place_in_recep"
HEAT_T = "pick_heat_then_place_in_recep"
COOL_T = "pick_cool_then_place_in_recep"
TWO = "pick_two_obj_and_place"
TASK_TYPES = (SIMPLE, LOOK, CLEAN_T, HEAT_T, COOL_T, TWO)

#: task type -> transform name (or None)
TASK_TRANSFORM = {SIMPLE: None, LOOK: None, CLEAN_T: "clean", HEAT_T: "heat", COOL_T: "cool", TWO: None}

#: task type -> rooms it is generated in
TASK_ROOMS = {
    SIMPLE: ROOMS,
    LOOK: ("livingroom", "bedroom"),
    CLEAN_T: ("kitchen", "bathroom"),
    HEAT_T: ("kitchen",),
    COOL_T: ("kitchen",),
    TWO: ROOMS,
}

#: task type -> target object kinds (ALFWorld's lists, restricted to this catalogue); None = any
TASK_TARGETS: dict[str, frozenset[str] | None] = {
    SIMPLE: None,
    TWO: None,
    LOOK: frozenset(
        "alarmclock book box cd cellphone creditcard keychain laptop mug newspaper pen pencil pillow "
        "remotecontrol statue vase watch tissuebox".split()
    ),
    CLEAN_T: frozenset(
        "apple bowl butterknife cloth cup dishsponge egg fork kettle knife ladle lettuce mug pan plate "
        "pot potato soapbar spatula spoon tomato".split()
    ),
    HEAT_T: frozenset("apple bread cup egg mug plate potato tomato".split()),
    COOL_T: frozenset("apple bowl bread cup egg lettuce mug pan plate pot potato tomato winebottle".split()),
}

#: Extra goal receptacle kinds for transform tasks (beside the target's own prior kinds).
TRANSFORM_GOALS = {
    "heat": ("countertop", "diningtable", "cabinet", "fridge", "garbagecan", "shelf"),
    "cool": ("countertop", "diningtable", "cabinet", "microwave", "garbagecan", "shelf"),
    "clean": ("countertop", "diningtable", "cabinet", "shelf", "drawer"),
}

#: ALFWorld's instruction templates, two per type.
TEMPLATES = {
    SIMPLE: ("put a {obj} in {recep}.", "put some {obj} on {recep}."),
    LOOK: ("look at {obj} under the {lamp}.", "examine the {obj} with the {lamp}."),
    CLEAN_T: ("put a clean {obj} in {recep}.", "clean some {obj} and put it in {recep}."),
    HEAT_T: ("put a hot {obj} in {recep}.", "heat some {obj} and put it in {recep}."),
    COOL_T: ("put a cool {obj} in {recep}.", "cool some {obj} and put it in {recep}."),
    TWO: ("put two {obj} in {recep}.", "find two {obj} and put them in {recep}."),
}

#: Tasks per type in each split: ALFWorld's per-type counts (train 3,553; valid_seen 140;
#: valid_unseen 134).
SPLIT_COUNTS = {
    "train": {SIMPLE: 790, LOOK: 308, CLEAN_T: 650, HEAT_T: 459, COOL_T: 533, TWO: 813},
    "valid_seen": {SIMPLE: 35, LOOK: 13, CLEAN_T: 27, HEAT_T: 16, COOL_T: 25, TWO: 24},
    "valid_unseen": {SIMPLE: 24, LOOK: 18, CLEAN_T: 31, HEAT_T: 23, COOL_T: 21, TWO: 17},
}
