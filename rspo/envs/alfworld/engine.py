"""The ``alfworld`` package's text engine, loaded as ALFWorld loads it: TextWorld's ``PddlEnv`` (the
PDDL state kept by Fast Downward) wrapped in ALFWorld's ``AlfredDemangler`` (entity names such as
``apple 1``) and ``AlfredInfos`` (the game file in the state).

Every ``PddlEnv.reset()`` translates the domain and problem to SAS with Fast Downward's translator,
twice (once more, optimised, for replanning): about 2 s each on a household-sized room. The
translation is a pure function of its text inputs and its result is only read, so this module keeps
the last :data:`CACHE_SIZE` translations (:func:`install_translation_cache`): a game's second and later
resets, and another environment's on the same game (the copies of a GiGPO group), skip it.

Importing this module needs the ``alfworld`` extra (``pip install -e .[alfworld]``).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import fast_downward
import textworld
from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
from textworld.envs.pddl import PddlEnv

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


def request_infos(facts: bool = False) -> textworld.EnvInfos:
    """What the engine reports every step: feedback, admissible commands, won (and the facts, which
    ALFWorld's handcoded expert reads)."""
    return textworld.EnvInfos(feedback=True, won=True, admissible_commands=True, facts=facts)


def load_game(path: str, facts: bool = False):
    """The engine with game file ``path`` loaded (call ``reset()`` to start)."""
    env = AlfredInfos(AlfredDemangler(PddlEnv(request_infos(facts)), shuffle=False))
    env.load(str(path))
    return env
