"""Multi-turn text environments behind one contract (see :mod:`rspo.envs.base`).

>>> import rspo.envs
>>> rspo.envs.list_envs()
['detour', 'household', 'shop']
>>> env = rspo.envs.make("household", split="valid_seen")
>>> obs, info = env.reset(seed=0)

The environments are the entries of :data:`ENVS` (:mod:`rspo.envs.registry`); their modules are
imported on first use, so that ``import rspo.envs`` stays cheap.
"""

from __future__ import annotations

from rspo.envs.base import INFO_KEYS, TextEnv
from rspo.envs.registry import ENVS, EnvSpec

__all__ = ["ENVS", "INFO_KEYS", "EnvSpec", "TextEnv", "make", "list_envs", "env_class", "spec"]


def list_envs() -> list[str]:
    """Names accepted by :func:`make`, sorted."""
    return ENVS.names()


def spec(name: str) -> EnvSpec:
    """The registry entry of environment ``name`` (a ValueError naming the choices if there is none)."""
    return ENVS.entry(name)


def env_class(name: str) -> type[TextEnv]:
    """The environment class registered under ``name``."""
    return spec(name).cls


def make(name: str, split: str = "train", **options) -> TextEnv:
    """Build environment ``name`` on ``split``; ``options`` go to its constructor (max_steps, misalignment, ...)."""
    return spec(name).cls(split=split, **options)
