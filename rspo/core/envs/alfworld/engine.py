"""The ``alfworld`` package's text engine, loaded as ALFWorld loads it: TextWorld's ``PddlEnv`` (the
PDDL state kept by Fast Downward) wrapped in ALFWorld's ``AlfredDemangler`` (entity names such as
``apple 1``) and ``AlfredInfos`` (the game file in the state).

Every ``PddlEnv.reset()`` translates the domain and problem to SAS with Fast Downward's translator,
twice (once more, optimised, for replanning): about 2 s each on a household-sized room. The
translation is a pure function of its text inputs and its result is only read, so this module keeps
the last :data:`CACHE_SIZE` translations (:func:`install_translation_cache`): a game's second and later
resets, and another environment's on the same game (the copies of a GiGPO group), skip it.

Every step, TextWorld's text grammar then parses, with TatSu, each admissible action's command template
and each production rule's condition, again: the same few hundred strings, parsed thousands of times.
:func:`install_grammar_cache` keeps their parses (a fresh deep copy of the parse for each caller, which
then writes into it, as it did into its own): the same observations, admissible commands and facts,
step for step (tests/test_alfworld.py), at about 2.6 times the steps/s (benchmarks/bench_envs.py).

Importing this module needs the ``alfworld`` extra (``pip install -e .[alfworld]``).
"""

from __future__ import annotations

import copy
import functools
import hashlib
from collections import OrderedDict

import fast_downward
import textworld
from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
from textworld.envs.pddl import PddlEnv, textgen
from textworld.logic import Rule

CACHE_SIZE = 32
_CACHE: OrderedDict = OrderedDict()


def install_translation_cache() -> None:
    """Wrap ``fast_downward.pddl2sas`` (as TextWorld's PDDL state calls it) in a small LRU cache."""
    original = fast_downward.pddl2sas
    if getattr(original, "_rspo_cached", False):
        return

    def pddl2sas(domain, problem, *args, **kwargs):
        key = hashlib.sha1(repr((domain, problem, args, sorted(kwargs.items()))).encode()).hexdigest()
        hit = _CACHE.get(key)
        if hit is None:
            hit = _CACHE[key] = original(domain, problem, *args, **kwargs)
            while len(_CACHE) > CACHE_SIZE:
                _CACHE.popitem(last=False)
        else:
            _CACHE.move_to_end(key)
        return hit

    pddl2sas._rspo_cached = True
    fast_downward.pddl2sas = pddl2sas


install_translation_cache()

GRAMMAR_CACHE_SIZE = 8192


def install_grammar_cache() -> None:
    """Memoise the text grammar's parse of a string (``textgen._parse_and_convert``; each call gets a
    deep copy) and of a rule's condition (``Rule.parse_conjunctive_query``; the rule is only read)."""
    if getattr(textgen._parse_and_convert, "_rspo_cached", False):
        return
    parse = functools.lru_cache(maxsize=GRAMMAR_CACHE_SIZE)(textgen._parse_and_convert)

    def parse_and_convert(*args, **kwargs):
        return copy.deepcopy(parse(*args, **kwargs))

    query = functools.lru_cache(maxsize=GRAMMAR_CACHE_SIZE)(Rule.parse_conjunctive_query.__func__)
    parse_and_convert._rspo_cached = True
    parse_and_convert.original = textgen._parse_and_convert
    textgen._parse_and_convert = parse_and_convert
    Rule.parse_conjunctive_query = classmethod(query)


def uninstall_grammar_cache() -> None:
    """Back to TextWorld's own parsing (for the test that compares the two)."""
    if getattr(textgen._parse_and_convert, "_rspo_cached", False):
        textgen._parse_and_convert = textgen._parse_and_convert.original
        Rule.parse_conjunctive_query = classmethod(Rule.parse_conjunctive_query.__func__.__wrapped__)


install_grammar_cache()


def request_infos(facts: bool = False) -> textworld.EnvInfos:
    """What the engine reports every step: feedback, admissible commands, won (and the facts, which
    ALFWorld's handcoded expert reads)."""
    return textworld.EnvInfos(feedback=True, won=True, admissible_commands=True, facts=facts)


def load_game(path: str, facts: bool = False):
    """The engine with game file ``path`` loaded (call ``reset()`` to start)."""
    env = AlfredInfos(AlfredDemangler(PddlEnv(request_infos(facts)), shuffle=False))
    env.load(str(path))
    return env
