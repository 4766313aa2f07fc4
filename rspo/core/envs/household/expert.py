"""The household expert: a planner that acts only on what the agent has observed.

Its memory is what the episode's observations have shown (kept by the engine as it runs every step,
whoever chose the actions): the receptacle list of the first observation, which receptacles'
contents have been seen (and so what is in them: only the agent changes the world), where it is and
what it holds. It never reads the contents of a receptacle it has not seen; to find an object it
searches, visiting (and opening) receptacles in the order of a fixed prior of where that kind of
object usually is (:meth:`~.world.Layout.order_for`), like a sensible person.

The plan, recomputed from that memory at every call (so it also works mid-episode, after any
actions of another policy):

1. holding a target-kind object: transform it if the task asks (go to the appliance, heat / cool /
   clean), then put it in a goal receptacle (go, open if closed, move); look-at: go to the lamp
   (searching for it if not seen yet) and use it;
2. holding anything else: put it down where the agent stands (open it first if closed);
3. a target-kind object has been seen (and does not already count for the goal): go, open, take;
4. otherwise search: open the closed receptacle the agent stands at if its contents are unseen, else
   go to the next unseen receptacle in prior order.
"""

from __future__ import annotations

from rspo.core.envs.household.catalogue import LOOK, TWO
from rspo.core.envs.household.engine import World


def expert_action(w: World) -> str:
    """The expert's next command in world ``w`` ("look" once the goal holds)."""
    if w.won:
        return "look"
    g = w.goal
    h = w.held
    if h >= 0:
        if w.object_kinds[h] != g.obj:
            return _drop(w, h)
        if g.type == LOOK:
            return _light(w)
        if (w.flags[h] & g.flag) != g.flag:
            return _treat(w, h)
        return _place(w, h)
    o = _known_target(w)
    if o >= 0:
        return _at(w, w.where[o], f"take {w.object_names[o]} from {w.layout.receptacle_names[w.where[o]]}")
    return _search(w, g.obj)


def _at(w: World, r: int, action: str) -> str:
    """Go to receptacle r, open it if closed, then do ``action``."""
    L = w.layout
    if w.loc != r:
        return L.goto[r]
    if L.openable[r] and not w.is_open[r]:
        return "open " + L.receptacle_names[r]
    return action


def _best_goal(w: World) -> int:
    """The goal receptacle to fill: the seen one holding most goal-satisfying objects, else the first."""
    counts = w.goal_counts()
    return min(w.goal_receps, key=lambda r: (-(counts.get(r, 0) if w.seen[r] else 0), r))


def _known_target(w: World) -> int:
    """The seen target-kind object to fetch next (-1 if none): already transformed ones first, then
    the one at the agent's receptacle, then in open receptacles, then by receptacle and object."""
    g, L = w.goal, w.layout
    skip = _best_goal(w) if g.type == TWO else -1
    best, best_key = -1, None
    for r in w.seen_list:
        if r == skip:
            continue
        for o in w.contents[r]:
            if w.object_kinds[o] == g.obj:
                key = (
                    (w.flags[o] & g.flag) != g.flag,
                    r != w.loc,
                    L.openable[r] and not w.is_open[r],
                    r,
                    o,
                )
                if best_key is None or key < best_key:
                    best, best_key = o, key
    return best


def _place(w: World, h: int) -> str:
    if w.goal.type == TWO:
        r = _best_goal(w)
    else:
        r = w.loc if w.loc in w.goal_receps else min(w.goal_receps)
    return _at(w, r, f"move {w.object_names[h]} to {w.layout.receptacle_names[r]}")


def _treat(w: World, h: int) -> str:
    L, g = w.layout, w.goal
    appliances = [r for kind in g.appliances for r in L.by_kind.get(kind, ())]
    r = w.loc if w.loc in appliances else appliances[0]
    if w.loc != r:
        return L.goto[r]
    return f"{g.transform} {w.object_names[h]} with {L.receptacle_names[r]}"


def _light(w: World) -> str:
    for lp in w.goal_lamps:
        r = w.where[lp]
        if w.seen[r]:
            return _at(w, r, "use " + w.object_names[lp])
    return _search(w, w.goal.lamp)


def _drop(w: World, h: int) -> str:
    L = w.layout
    if w.loc >= 0:
        return _at(w, w.loc, f"move {w.object_names[h]} to {L.receptacle_names[w.loc]}")
    return L.goto[L.openable.index(False)]


def _search(w: World, kind: str) -> str:
    L = w.layout
    if w.loc >= 0 and not w.seen[w.loc]:  # standing at a closed receptacle not looked into yet
        return "open " + L.receptacle_names[w.loc]
    for r in L.order_for(kind):
        if not w.seen[r]:
            return L.goto[r]
    return "look"  # everything seen: unreachable while a target exists
