"""``household``: an ALFWorld-style text environment in pure Python (docs/design.md §3.1).

Seeded rooms (kitchen, livingroom, bedroom, bathroom) with 15-40 receptacles and 20-60 objects,
ALFWorld's six task types, command grammar and observation style, splits mirroring ALFWorld
(train 3,553, valid_seen 140, valid_unseen 134 tasks) from ``data/household/tasks.jsonl``, and an
expert that acts only on what the agent has observed.

    >>> from rspo.core.envs.household import HouseholdEnv
    >>> env = HouseholdEnv(split="valid_seen")
    >>> obs, info = env.reset(task_id="valid_seen/00000")
    >>> obs.startswith("-= Welcome to TextWorld, ALFRED! =-")
    True

Modules: :mod:`.catalogue` (vocabulary and priors), :mod:`.world` (layouts, placement),
:mod:`.engine` (rules, observations, goals), :mod:`.process` (the process reward),
:mod:`.expert` (the planner), :mod:`.tasks` (task lists), :mod:`.env` (the contract).

The process reward - what earns it, how much, and how the ``misalignment`` knob makes it mislead -
is documented in :data:`PROCESS_REWARD_DOC` (also ``HouseholdEnv.process_reward_doc``).
"""

from rspo.core.envs.household.env import HouseholdEnv
from rspo.core.envs.household.process import PROCESS_REWARD_DOC

__all__ = ["HouseholdEnv", "PROCESS_REWARD_DOC"]
