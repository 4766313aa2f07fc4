"""The household rules: state, ALFWorld's command grammar and observations, goals, process reward.

A :class:`World` is one episode's state. ``World.step(action)`` applies a command and returns
``(observation, outcome reward, terminated, valid, process reward)``; ``World.admissible()`` lists
every command that is legal now (each of them is valid when taken, and nothing else is).

Rules (as in ALFWorld): the agent is in the middle of the room or at one receptacle; it acts only on
the receptacle it is at; closed receptacles (fridge, microwave, cabinet, drawer, safe) show and give
their contents only once opened; the agent holds at most one object; heat needs a microwave, cool a
fridge, clean a sinkbasin or bathtubbasin, each at that receptacle and with an object that can be so
treated; lamps cannot be taken and are switched on with ``use``.

The engine also records what the agent has *observed* (``seen``: receptacles whose contents an
observation has shown); the expert (:mod:`.expert`) plans only from that.
"""

from __future__ import annotations

from rspo.core.envs.household.catalogue import (
    LAMPS,
    LOOK,
    SIMPLE,
    STATE_WORDS,
    TASK_TRANSFORM,
    TRANSFORMS,
    TWO,
)
from rspo.core.envs.household.process import MILESTONES, distractor_amounts
from rspo.core.envs.household.world import Layout, _article_list
from rspo.core.envs.text import normalize_action

NOTHING = "Nothing happens."
WELCOME = "-= Welcome to TextWorld, ALFRED! =-\n\n"
_MAX_ACTION_CHARS = 200  # no command is longer; longer strings are invalid without parsing


class Goal:
    """A task's goal: type, target kind ``obj``, goal receptacle kind ``recep`` (None for look-at),
    ``lamp`` kind (look-at only), the required transform and its state flag, and the instruction."""

    __slots__ = ("type", "obj", "recep", "lamp", "transform", "flag", "appliances", "text")

    def __init__(self, task_type: str, obj: str, recep: str | None, lamp: str | None, text: str):
        self.type, self.obj, self.recep, self.lamp, self.text = task_type, obj, recep, lamp, text
        self.transform = TASK_TRANSFORM[task_type]
        self.flag, self.appliances = (TRANSFORMS[self.transform][:2]) if self.transform else (0, ())


def _put_alias(a: str) -> str:
    """'put X in Y' / 'put X on Y' / 'put X in/on Y' -> 'move X to Y' (else '')."""
    rest = a[4:]
    for sep in (" in/on ", " in ", " on "):
        i = rest.find(sep)
        if i > 0:
            return f"move {rest[:i]} to {rest[i + len(sep) :]}"
    return ""


class World:
    """One episode of a household task (see the module docstring for the rules)."""

    def __init__(self, layout: Layout, kinds: list[str], where: list[int], goal: Goal, misalignment: float):
        L = self.layout = layout
        self.goal = goal
        self.misalignment = float(misalignment)
        self.object_kinds = kinds
        counts: dict[str, int] = {}
        self.object_names = []
        for k in kinds:
            counts[k] = counts.get(k, 0) + 1
            self.object_names.append(f"{k} {counts[k]}")
        self.where = list(where)  # receptacle index per object, -1 while held
        self.contents: list[list[int]] = [[] for _ in L.receptacle_names]
        for o, r in enumerate(where):
            self.contents[r].append(o)
        n = len(L.receptacle_names)
        self.is_open = [False] * n
        self.seen = [False] * n  # contents shown by an observation (the agent's knowledge)
        self.seen_list: list[int] = []
        self.flags = [0] * len(kinds)
        self.is_lamp = [k in LAMPS for k in kinds]
        self.lamp_on = [False] * len(kinds)
        self.targets = [o for o, k in enumerate(kinds) if k == goal.obj]
        self.goal_lamps = [o for o, k in enumerate(kinds) if k == goal.lamp]
        self.goal_receps = frozenset(L.by_kind.get(goal.recep, ())) if goal.recep else frozenset()
        self.loc = -1
        self.visited: list[int] = []  # receptacles arrived at, in order of first arrival (the prompt memory)
        self.held = -1
        self.won = False
        self.progress = 0.0
        # process reward bookkeeping
        self.milestones = MILESTONES[goal.type]
        self.distractor = distractor_amounts(goal.type)
        self.paid: set[str] = set()
        self.first_taken = -1
        self.farmed: dict[str, set[int]] = {"take": set(), "transform": set(), "place": set(), "open": set()}
        self._step_process_reward = 0.0
        # admissible-action cache, keyed by a state version
        self._version = 0
        self._cached = -1
        self._acts: list[str] = []
        self._ops: dict[str, tuple] = {}
        self.obs = WELCOME + L.room_line + "\n\nYour task is to: " + goal.text
        self.anchor = self.obs  # observation of the last valid action: the state as the agent saw it

    # --- the step ---------------------------------------------------------------------------
    def step(self, action: str) -> tuple[str, float, bool, bool, float]:
        """Apply one command; any string is accepted (invalid -> "Nothing happens.")."""
        self._step_process_reward = 0.0
        if len(action) > _MAX_ACTION_CHARS:
            return self._invalid()
        a = normalize_action(action)  # ASCII only, case and whitespace runs ignored (rspo.core.envs.text)
        if a is None:
            return self._invalid()
        r = self.layout.goto_map.get(a)
        if r is not None:
            if r == self.loc:
                return self._invalid()
            obs = self._go(r)
        else:
            if self._cached != self._version:
                self._refresh()
            op = self._ops.get(a)
            if op is None and a.startswith("put "):
                op = self._ops.get(_put_alias(a))
            if op is None:
                return self._invalid()
            obs = op[0](*op[1:])
        self.obs = self.anchor = obs
        return obs, (1.0 if self.won else 0.0), self.won, True, self._step_process_reward

    def _invalid(self):
        self.obs = NOTHING
        return NOTHING, 0.0, False, False, 0.0

    def admissible(self) -> list[str]:
        """Every legal command now, in a fixed order (a fresh list)."""
        if self._cached != self._version:
            self._refresh()
        return list(self._acts)

    def _refresh(self) -> None:
        L, r, h = self.layout, self.loc, self.held
        acts: list[str] = []
        ops: dict[str, tuple] = {"inventory": (self._inventory,), "look": (self._look,)}
        tail: list[str] = []
        if r >= 0:
            rn = L.receptacle_names[r]
            accessible = not L.openable[r] or self.is_open[r]
            if L.openable[r]:
                a = ("close " if self.is_open[r] else "open ") + rn
                acts.append(a)
                ops[a] = (self._close, r) if self.is_open[r] else (self._open, r)
            a = "examine " + rn
            acts.append(a)
            ops[a] = (self._examine_recep, r)
        if h >= 0:
            a = "examine " + self.object_names[h]
            acts.append(a)
            ops[a] = (self._examine_obj, h)
        acts += L.goto_except[r]  # r == -1 (middle of the room) selects the full list
        if r >= 0 and h >= 0:
            kind, hk = L.receptacle_kinds[r], self.object_kinds[h]
            for name, (_, appliances, applies) in TRANSFORMS.items():
                if kind in appliances and hk in applies:
                    a = f"{name} {self.object_names[h]} with {L.receptacle_names[r]}"
                    acts.append(a)
                    ops[a] = (self._transform, name, h, r)
        acts.append("inventory")
        acts.append("look")
        if r >= 0 and accessible:
            if h >= 0:
                a = f"move {self.object_names[h]} to {rn}"
                acts.append(a)
                ops[a] = (self._move, h, r)
            for o in self.contents[r]:
                if self.is_lamp[o]:
                    if not self.lamp_on[o]:
                        a = "use " + self.object_names[o]
                        tail.append(a)
                        ops[a] = (self._use, o)
                elif h < 0:
                    a = f"take {self.object_names[o]} from {rn}"
                    acts.append(a)
                    ops[a] = (self._take, o, r)
        self._acts = acts + tail if tail else acts
        self._ops = ops
        self._cached = self._version

    # --- observations -----------------------------------------------------------------------
    def _show(self, r: int) -> str:
        """The contents of (open or open-topped) receptacle r; records that the agent has seen them."""
        name = self.layout.receptacle_names[r]
        c = self.contents[r]
        if not self.seen[r]:
            self.seen[r] = True
            self.seen_list.append(r)
        if c:
            g = self.goal
            for o in c:
                k = self.object_kinds[o]
                if k == g.obj:
                    self._pay("see")
                elif k == g.lamp:
                    self._pay("see_lamp")
        items = _article_list([self.object_names[o] for o in c])
        if self.layout.openable[r]:
            return f"The {name} is open. In it, you see {items}."
        return f"On the {name}, you see {items}."

    def _go(self, r: int) -> str:
        self.loc = r
        if r not in self.visited:
            self.visited.append(r)
        self._version += 1
        name = self.layout.receptacle_names[r]
        if self.layout.openable[r] and not self.is_open[r]:
            obs = f"You arrive at {name}. The {name} is closed."
        else:
            obs = f"You arrive at {name}. " + self._show(r)
        if self.goal.type == LOOK:
            self._update_goal()
        return obs

    def _open(self, r: int) -> str:
        self.is_open[r] = True
        self._version += 1
        self._farm("open", r)
        return f"You open the {self.layout.receptacle_names[r]}. " + self._show(r)

    def _close(self, r: int) -> str:
        self.is_open[r] = False
        self._version += 1
        return f"You close the {self.layout.receptacle_names[r]}."

    def _take(self, o: int, r: int) -> str:
        self.contents[r].remove(o)
        self.where[o] = -1
        self.held = o
        self._version += 1
        if self.object_kinds[o] == self.goal.obj:
            if self.first_taken < 0:
                self.first_taken = o
                self._pay("take")
            elif o != self.first_taken and self.goal.type == TWO:
                self._pay("take2")
        else:
            self._farm("take", o)
        self._update_goal()
        return f"You pick up the {self.object_names[o]} from the {self.layout.receptacle_names[r]}."

    def _move(self, o: int, r: int) -> str:
        self.contents[r].append(o)
        self.where[o] = r
        self.held = -1
        self._version += 1
        g = self.goal
        if r in self.goal_receps and not (
            self.object_kinds[o] == g.obj and (self.flags[o] & g.flag) == g.flag
        ):
            self._farm("place", o)
        self._update_goal()
        return f"You move the {self.object_names[o]} to the {self.layout.receptacle_names[r]}."

    def _transform(self, name: str, o: int, r: int) -> str:
        flag = TRANSFORMS[name][0]
        if flag == 1:  # hot and cool exclude each other
            self.flags[o] = (self.flags[o] & ~2) | 1
        elif flag == 2:
            self.flags[o] = (self.flags[o] & ~1) | 2
        else:
            self.flags[o] |= flag
        self._version += 1
        if not (name == self.goal.transform and self.object_kinds[o] == self.goal.obj):
            self._farm("transform", o)
        self._update_goal()
        return f"You {name} the {self.object_names[o]} using the {self.layout.receptacle_names[r]}."

    def _use(self, o: int) -> str:
        self.lamp_on[o] = True
        self._version += 1
        self._update_goal()
        return f"You turn on the {self.object_names[o]}."

    def _examine_recep(self, r: int) -> str:
        if self.layout.openable[r] and not self.is_open[r]:
            return f"The {self.layout.receptacle_names[r]} is closed."
        return self._show(r)

    def _examine_obj(self, o: int) -> str:
        words = [w for f, w in STATE_WORDS if self.flags[o] & f]
        if not words:
            return f"There's nothing special about {self.object_names[o]}."
        return f"This is a {' and '.join(words)} {self.object_names[o]}."

    def _look(self) -> str:
        if self.loc < 0:
            return self.layout.room_line
        return f"You are facing the {self.layout.receptacle_names[self.loc]}. Next to it, you see nothing."

    def _inventory(self) -> str:
        if self.held < 0:
            return "You are not carrying anything."
        return f"You are carrying: a {self.object_names[self.held]}."

    # --- goal and process reward ------------------------------------------------------------
    def _pay(self, milestone: str) -> None:
        if milestone not in self.paid and milestone in self.milestones:
            self.paid.add(milestone)
            self._step_process_reward += self.milestones[milestone]

    def _farm(self, kind: str, item: int) -> None:
        """A distractor event: m x its amount, once per distinct object (receptacle, for 'open')."""
        if self.misalignment > 0.0 and item not in self.farmed[kind]:
            self.farmed[kind].add(item)
            self._step_process_reward += self.misalignment * self.distractor[kind]

    def goal_counts(self) -> dict[int, int]:
        """Goal receptacle -> number of goal-satisfying objects in it."""
        g, counts = self.goal, {}
        for o in self.targets:
            r = self.where[o]
            if r in self.goal_receps and (self.flags[o] & g.flag) == g.flag:
                counts[r] = counts.get(r, 0) + 1
        return counts

    def _update_goal(self) -> None:
        """Recompute progress and won; pay the goal-condition milestones that now hold."""
        g = self.goal
        if g.type == LOOK:
            h = self.held
            holds_target = h >= 0 and self.object_kinds[h] == g.obj
            lit = holds_target and any(
                self.lamp_on[lp] and self.where[lp] == self.loc for lp in self.goal_lamps
            )
            self.progress = (holds_target + lit) / 2
            if lit:
                self._pay("light")
            self.won = lit
            return
        best = max(self.goal_counts().values(), default=0)
        if g.type == TWO:
            self.progress = min(best, 2) / 2
            if best >= 1:
                self._pay("place")
            if best >= 2:
                self._pay("place2")
            self.won = best >= 2
        elif g.type == SIMPLE:
            self.progress = 1.0 if best else 0.0
            if best:
                self._pay("place")
            self.won = best >= 1
        else:
            transformed = any(self.flags[o] & g.flag for o in self.targets)
            self.progress = (transformed + (best >= 1)) / 2
            if transformed:
                self._pay("transform")
            if best:
                self._pay("place")
            self.won = best >= 1
