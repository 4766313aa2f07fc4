"""Multi-turn text environments behind one contract (see :mod:`rspo.envs.base`).

>>> import rspo.envs
>>> rspo.envs.list_envs()
['household', 'shop']
>>> env = rspo.envs.make("household", split="valid_seen")
>>> obs, info = env.reset(seed=0)
"""

from __future__ import annotations

import importlib

from rspo.envs.base import INFO_KEYS, TextEnv, choice_error

# name -> "module:Class"; modules are imported on first use so that `import rspo.envs` stays cheap.
_REGISTRY: dict[str, str] = {
    "household": "rspo.envs.household:HouseholdEnv",
    "shop": "rspo.envs.shop:ShopEnv",
    "detour": "rspo.envs.detour:DetourEnv",
}

__all__ = ["INFO_KEYS", "TextEnv", "make", "list_envs", "env_class"]


def list_envs() -> list[str]:
    """Names accepted by :func:`make`, sorted."""
    return sorted(_REGISTRY)


def env_class(name: str) -> type[TextEnv]:
    """The environment class registered under ``name``."""
    if name not in _REGISTRY:
        raise choice_error("environment", name, list_envs())
    module, cls = _REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def make(name: str, split: str = "train", **options) -> TextEnv:
    """Build environment ``name`` on ``split``; ``options`` go to its constructor (max_steps, misalignment, ...)."""
    return env_class(name)(split=split, **options)
