"""The environment registry: one :class:`EnvSpec` per environment, everything the kit needs around it.

An environment is its package (a :class:`~rspo.core.envs.base.TextEnv` subclass: splits, horizon, expert,
process reward, the contract of :mod:`rspo.core.envs.base`) and one entry here. The entry is what the rest
of the kit reads, so nothing else lists environments:

=================  ==============================================================================
field              read by
=================  ==============================================================================
factory            :func:`rspo.core.envs.make` (``"module:Class"``, imported on first use, or a callable)
intro              :func:`rspo.core.prompts.build_prompt`: the prompt's first line
history            the prompt's observation/action pairs: ``TrainConfig(history=-1)`` and the warm start
show_admissible    whether prompts list the admissible actions (warm start; RL with ``"auto"``)
warm_start         :func:`rspo.core.sft.default_config`: the other :class:`~rspo.core.sft.WarmStartConfig` fields
tokenizer_family   :mod:`rspo.core.policies.tokenizer`: the environments whose text trains one tokenizer
data_files         committed files under ``data/<name>/`` (the default family's tokenizer key hashes them)
extra_tokens       whole tokens added to the family's tokenizer (the shop's product ids)
=================  ==============================================================================

To try an environment without editing this file, ``with ENVS.temporary(EnvSpec(...)):``
(:meth:`rspo.core.registry.Registry.temporary`); to add one for good, register it below. An adapter of a
real engine that trains only named models (``TrainConfig.model``) leaves ``tokenizer_family`` at
None: it then has no offline tokenizer or warm start. An entry joins a family only by naming it; the
default family's tokenizer (household and shop) is keyed on its members and their data files, so a
new member changes the key and the warm starts rebuild - never silently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rspo.core.registry import Registry, resolve

GENERIC_INTRO = "You are an expert agent. Your task is to: {task}"


@dataclass(frozen=True)
class EnvSpec:
    """One environment of the kit (see the module docstring for who reads each field)."""

    name: str
    factory: str | Callable  # "module:Class" or a callable(split=..., **options) -> TextEnv
    intro: str = GENERIC_INTRO  # the prompt's first line; {task} is the instruction
    history: int = 2  # observation/action pairs in a prompt, for its warm start and for RL
    show_admissible: bool = True  # prompts list the admissible actions (its warm start's, and RL's on auto)
    warm_start: Mapping = field(default_factory=dict)  # WarmStartConfig fields of its default policy
    # the offline tokenizer it shares (its text trains it: household and shop "default", detour its own);
    # None: no offline tokenizer, no warm start - train a named model. No family by default, so that a
    # new entry never joins one (and changes its members' tokenizer and warm starts) unless it says so
    tokenizer_family: str | None = None
    data_files: tuple[str, ...] = ()  # committed files under data/<name>/ its texts come from
    extra_tokens: str | Callable | None = None  # () -> list[str]: whole tokens of its family's tokenizer

    @property
    def cls(self) -> type:
        """The environment class (or the factory itself when it is a function)."""
        return resolve(self.factory)

    def warm_start_fields(self) -> dict:
        """The :class:`~rspo.core.sft.WarmStartConfig` fields of its default policy (besides ``env``)."""
        return {"show_admissible": self.show_admissible, **self.warm_start}

    def tokens(self) -> list[str]:
        """Its extra whole tokens (none by default)."""
        return list(resolve(self.extra_tokens)()) if self.extra_tokens else []


ENVS: Registry[EnvSpec] = Registry("environment")

# Warm starts (rspo.core.sft) chosen to land at 10-40 % greedy success in about 3-4 CPU minutes (measured:
# docs/training.md / warmstart.json). Household: without the admissible list (prompts 180 instead of
# 310 tokens; the candidates are scored anyway) the same steps reached a higher held-out accuracy.
# Shop: with it - the product ids to click are copied from it.
# Its training settings per profile are rspo.core.profiles' (TRAIN_PROFILES), as every environment's.
ENVS.register(
    EnvSpec(
        "household",
        "rspo.core.envs.household:HouseholdEnv",
        intro="You are an expert agent in a household. Your task is to: {task}",
        show_admissible=False,
        warm_start=dict(max_steps=1200),
        data_files=("tasks.jsonl",),
        tokenizer_family="default",
    )
)
ENVS.register(
    EnvSpec(
        "shop",
        "rspo.core.envs.shop:ShopEnv",
        intro="You are an expert agent shopping on a website. Your task is to: {task}",
        show_admissible=True,
        warm_start=dict(max_steps=500),
        data_files=("products.jsonl", "goals.jsonl"),
        extra_tokens="rspo.core.envs.shop.catalogue:product_tokens",
        tokenizer_family="default",
    )
)
# Detour (the credit-assignment lab): its own small tokenizer (short prompts, a small output layer);
# one pair of history (the state is in the observation; prompts near 110 tokens). Its warm start is
# imitation of *uniform play* - the model learns the action space, calibrated to a near-uniform choice
# among the admissible actions, and none of the task, so RL starts where undirected play succeeds in
# about 1% of episodes (the lab's sparsity). Every admissible action of each visited state is a target
# (one sampled action per state left the model, in one of two builds, unable to name the room's
# mechanism: 4-7% on it instead of 25%); the states are visited by the expert mixed half and half with
# random moves, so that the last room is seen too (random play alone almost never reaches it, and the
# model then put almost nothing on "open chest"). One step of history and no admissible list keep its
# prompts near 100 tokens. Its profiles (rspo.core.profiles): the quick one is study 2's chosen setting (QUICK_LAB).
ENVS.register(
    EnvSpec(
        "detour",
        "rspo.core.envs.detour:DetourEnv",
        intro="You explore a passage of rooms. Your task is to: {task}",
        history=1,
        show_admissible=False,
        warm_start=dict(n_demo_tasks=500, max_steps=600, random_frac=0.5, every_action=True, vocab_size=512),
        tokenizer_family="detour",
    )
)

# The real engines (issue 21, docs/alfworld-parity.md): optional extras (pip install -e .[alfworld] /
# .[textworld]) with data of their own ($ALFWORLD_DATA; games made with tw-make), so they are not entries
# of ENVS, every one of which runs from a fresh install (list_envs, `rspo demo`, the contract tests,
# TrainConfig.env). rspo.core.envs.make and rspo.core.envs.spec find them here. No offline tokenizer: train a named
# model on them (or enter them in ENVS for a while with ENVS.temporary, as tests/test_alfworld.py does).
ADAPTERS: Registry[EnvSpec] = Registry("environment adapter")
ADAPTERS.register(
    EnvSpec(
        "alfworld",
        "rspo.core.envs.alfworld:AlfworldEnv",
        intro="You are an expert agent in a household. Your task is to: {task}",
        tokenizer_family=None,
    )
)
ADAPTERS.register(
    EnvSpec(
        "textworld",
        "rspo.core.envs.textworld:TextWorldEnv",
        intro="You are playing a text adventure. Your task is to: {task}",
        tokenizer_family=None,
    )
)
