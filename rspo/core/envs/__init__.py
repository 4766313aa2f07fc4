"""Multi-turn text environments behind one contract (see :mod:`rspo.core.envs.base`).

>>> import rspo.core.envs
>>> rspo.core.envs.list_envs()
['detour', 'household', 'shop']
>>> env = rspo.core.envs.make("household", split="valid_seen")
>>> obs, info = env.reset(seed=0)

The environments are the entries of :data:`ENVS` (:mod:`rspo.core.envs.registry`); their modules are
imported on first use, so that ``import rspo.core.envs`` stays cheap. The real engines' adapters
(``alfworld``, ``textworld``: optional extras with data of their own) are the entries of
:data:`~rspo.core.envs.registry.ADAPTERS`: :func:`make` builds them too, :func:`list_envs` lists the built-ins.
"""

from __future__ import annotations

from rspo.core.envs.base import INFO_KEYS, TextEnv
from rspo.core.envs.registry import ADAPTERS, ENVS, EnvSpec

__all__ = ["ADAPTERS", "ENVS", "INFO_KEYS", "EnvSpec", "TextEnv", "make", "list_envs", "env_class", "spec"]


def list_envs() -> list[str]:
    """The built-in environments' names (:data:`ENVS`), sorted; :func:`make` also builds the adapters'."""
    return ENVS.names()


def spec(name: str) -> EnvSpec:
    """The registry entry of environment ``name``, a built-in or an adapter (a ValueError naming the
    built-ins if there is none)."""
    if name not in ENVS and name in ADAPTERS:
        return ADAPTERS[name]
    return ENVS.entry(name)


def env_class(name: str) -> type[TextEnv]:
    """The environment class registered under ``name``."""
    return spec(name).cls


def make(name: str, split: str = "train", **options) -> TextEnv:
    """Build environment ``name`` on ``split``; ``options`` go to its constructor (max_steps, misalignment, ...)."""
    return spec(name).cls(split=split, **options)
