"""Progress towards a PDDL goal of ALFWorld's form, from the state's facts (no planner).

ALFWorld's goals (``alfworld.gen.goal_library``) are conjunctions of existentially quantified
conjunctions of literals, e.g. for a heat task::

    (and (exists (?r - receptacle) (exists (?o - object)
        (and (heatable ?o) (objectType ?o AppleType) (receptacleType ?r CounterTopType)
             (isHot ?o) (inReceptacle ?o ?r)))))

:class:`GoalProgress` splits each top-level conjunct into its *static* literals (object and
receptacle types, properties such as ``heatable``, where receptacles stand: facts no action changes),
which a binding of the variables must satisfy, and its *sub-conditions*: the literals actions change
(``isHot``, ``inReceptacle``, ``holds``, ``isToggled``, ``atLocation``, ...). A conjunct's progress is
the largest fraction of its sub-conditions that one admissible binding satisfies now; the goal's
progress is the sum over conjuncts of sub-conditions met over the number of sub-conditions. A heat
task is 0, 1/2 (some apple is hot, or some apple is on a countertop) or 1.

``relaxed=True`` drops the ``objectType`` literals: any object counts as the target (the process
reward's misalignment knob, :mod:`rspo.core.envs.alfworld.env`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

#: predicates no action of ALFWorld's domain changes
STATIC = frozenset(
    {
        "objecttype",
        "receptacletype",
        "receptacleatlocation",
        "openable",
        "pickupable",
        "heatable",
        "coolable",
        "cleanable",
        "toggleable",
        "sliceable",
        "moveable",
        "cancontain",
        "isreceptacleobject",
    }
)


def parse_sexp(text: str):
    """Nested lists of lower-cased tokens from one s-expression (``"# t"`` read as ``"- t"``)."""
    tokens = re.findall(r"\(|\)|[^\s()]+", text.lower().replace("#", " - "))
    stack: list[list] = [[]]
    for tok in tokens:
        if tok == "(":
            stack.append([])
        elif tok == ")":
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    return stack[0][0] if stack[0] else []


def _section(problem: str, name: str) -> str:
    """The text of the ``(:name ...)`` section of a PDDL problem."""
    i = problem.lower().find("(" + name)
    if i < 0:
        raise ValueError(f"no ({name} ...) in the PDDL problem")
    depth = 0
    for j in range(i, len(problem)):
        depth += problem[j] == "("
        depth -= problem[j] == ")"
        if depth == 0:
            return problem[i : j + 1]
    raise ValueError(f"unbalanced ({name} ...) in the PDDL problem")


def _typed(items: list) -> list[tuple[str, str]]:
    """``[?a, -, t, ?b, -, u]`` (or ``?a ?b - t``) -> ``[(?a, t), (?b, u)]``."""
    out, pending, i = [], [], 0
    while i < len(items):
        if items[i] == "-" and i + 1 < len(items):
            out += [(name, items[i + 1]) for name in pending]
            pending, i = [], i + 2
        else:
            pending.append(items[i])
            i += 1
    return out + [(name, "object") for name in pending]


class _Conjunct:
    def __init__(self):
        self.vars: list[tuple[str, str]] = []
        self.static: list[tuple] = []
        self.dynamic: list[tuple] = []  # (positive, atom)
        self.distinct: list[tuple[str, str]] = []

    def add(self, expr, relaxed: bool) -> None:
        head = expr[0]
        if head == "and":
            for child in expr[1:]:
                self.add(child, relaxed)
        elif head == "exists":
            self.vars += _typed(expr[1])
            self.add(expr[2], relaxed)
        elif head == "not" and expr[1][0] == "=":
            self.distinct.append((expr[1][1], expr[1][2]))
        elif head == "not":
            self.dynamic.append((False, tuple(expr[1])))
        elif head in STATIC:
            if not (relaxed and head == "objecttype"):
                self.static.append(tuple(expr))
        else:
            self.dynamic.append((True, tuple(expr)))


class GoalProgress:
    """The goal of a PDDL problem, ready to measure progress on a set of facts.

    Args:
        problem: the PDDL problem text (its ``:objects`` and ``:goal`` are read).
        relaxed: drop ``objectType`` literals (any object counts as the target).
    """

    def __init__(self, problem: str, relaxed: bool = False):
        objects = parse_sexp(_section(problem, ":objects"))[1:]
        self.by_type: dict[str, list[str]] = defaultdict(list)
        for name, type_ in _typed(objects):
            self.by_type[type_].append(name)
        goal = parse_sexp(_section(problem, ":goal"))[1]
        parts = goal[1:] if goal[0] == "and" else [goal]
        self.conjuncts = []
        for part in parts:
            c = _Conjunct()
            c.add(part, relaxed)
            self.conjuncts.append(c)
        self.total = sum(len(c.dynamic) for c in self.conjuncts)

    def progress(self, facts: Iterable[tuple]) -> float:
        """Fraction of sub-conditions met (0..1) given ``facts``: tuples ``(predicate, arg, ...)``
        lower-cased, as :func:`facts_of` gives them."""
        if not self.total:
            return 0.0
        facts = set(facts)
        met = sum(self._best(c, facts) for c in self.conjuncts)
        return met / self.total

    def _best(self, c: _Conjunct, facts: set) -> int:
        best = -1
        names = [v for v, _ in c.vars]
        binding: dict[str, str] = {}

        def ground(atom):
            return tuple(binding.get(a, a) for a in atom)

        def consistent() -> bool:
            for atom in c.static:
                if all(not a.startswith("?") or a in binding for a in atom[1:]) and ground(atom) not in facts:
                    return False
            for a, b in c.distinct:
                if a in binding and b in binding and binding[a] == binding[b]:
                    return False
            return True

        def search(i: int) -> None:
            nonlocal best
            if i == len(names):
                score = sum((ground(atom) in facts) == positive for positive, atom in c.dynamic)
                best = max(best, score)
                return
            var, type_ = c.vars[i]
            for value in self.by_type.get(type_, ()):
                binding[var] = value
                if consistent():
                    search(i + 1)
                    if best == len(c.dynamic):
                        break
                del binding[var]
            binding.pop(var, None)

        search(0)
        return max(best, 0)


def facts_of(propositions) -> set[tuple]:
    """TextWorld propositions (``state["_facts"]``) as lower-cased tuples ``(predicate, arg, ...)``."""
    return {(p.name.lower(), *(v.name.lower() for v in p.arguments)) for p in propositions}
