"""A household-trained policy in the real ALFWorld engine: the same tasks, exported, played greedily.

    >>> from rspo.sft import load_or_build_default
    >>> from rspo.envs.alfworld.transfer import household_vs_alfworld
    >>> household_vs_alfworld(load_or_build_default("household"), n_tasks=30)  # doctest: +SKIP
    {'household': {'success': ...}, 'alfworld': {'success': ...}}

The exported games are played through the kit's own rollout code (:func:`rspo.sft.evaluate_greedy`)
with household's prompts (its intro, history and admissible-list setting), the adapter entering the
environment registry for the call only. The first ``n_tasks`` tasks of the household split are
exported, so both numbers are over the same tasks.
"""

from __future__ import annotations

import tempfile
from pathlib import Path


def household_vs_alfworld(
    policy, split: str = "valid_seen", n_tasks: int = 30, data: str | Path | None = None, max_steps: int = 50
) -> dict:
    """Greedy success of ``policy`` on the first ``n_tasks`` household tasks of ``split``, in household
    and in ALFWorld's engine (the same tasks exported under ``data``, a temporary folder by default)."""
    from rspo.envs.alfworld.env import AlfworldEnv
    from rspo.envs.alfworld.export import export_specs, select
    from rspo.envs.registry import ENVS
    from rspo.sft import evaluate_greedy, prompt_settings

    settings = prompt_settings("household")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(data or tmp)
        export_specs(select(split, limit=n_tasks), root)

        class Exported(AlfworldEnv):
            def __init__(self, split: str = split, **options):
                options.setdefault("max_steps", max_steps)
                super().__init__(split=split, data=root, **options)

        import dataclasses

        entry = dataclasses.replace(
            ENVS["household"], name="alfworld_household", factory=Exported, profiles={}
        )
        out = {"household": evaluate_greedy(policy, "household", split, n_tasks, **settings)}
        with ENVS.temporary(entry):
            out["alfworld"] = evaluate_greedy(policy, "alfworld_household", split, n_tasks, **settings)
    return out
