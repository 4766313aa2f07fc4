"""A household-trained policy in the real ALFWorld engine: the same tasks, exported, played greedily.

    >>> from rspo.core.sft import load_or_build_default
    >>> from rspo.study.transfer import household_vs_alfworld
    >>> household_vs_alfworld(load_or_build_default("household"), n_tasks=30)  # doctest: +SKIP
    {'household': {'success': ...}, 'alfworld': {'success': ...}}

The exported games are played through the kit's own rollout code (:func:`rspo.core.sft.evaluate_greedy`)
with household's prompts (its intro, history and admissible-list setting), the adapter entering the
environment registry for the call only. The first ``n_tasks`` tasks of the household split are
exported, so both numbers are over the same tasks.

:func:`same_tasks_in_alfworld` is notebook 01's section on the real engine: the household expert's plan
replayed in both engines (the control), then the household warm start if it is already built.

It sits beside :mod:`rspo.core.sft`, not in ``rspo/core/envs/alfworld/``: it plays trained policies, and the
environments import nothing above them.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path

INSTALL_LINE = (
    'the real ALFWorld engine is the alfworld extra, not installed here: pip install -e ".[alfworld]" '
    "(about 7 minutes; no data download needed); skipped"
)


def household_vs_alfworld(
    policy, split: str = "valid_seen", n_tasks: int = 30, data: str | Path | None = None, max_steps: int = 50
) -> dict:
    """Greedy success of ``policy`` on the first ``n_tasks`` household tasks of ``split``, in household
    and in ALFWorld's engine (the same tasks exported under ``data``, a temporary folder by default),
    both with horizon ``max_steps``."""
    from rspo.core.envs.alfworld.env import AlfworldEnv
    from rspo.core.envs.alfworld.export import export_specs, select
    from rspo.core.envs.registry import ENVS
    from rspo.core.sft import evaluate_greedy, prompt_settings

    settings = prompt_settings("household")
    household = ENVS["household"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(data or tmp)
        export_specs(select(split, limit=n_tasks), root)

        class Exported(AlfworldEnv):
            name = "alfworld_household"  # the prompts' intro is the registry entry's: household's

            def __init__(self, split: str = split, **options):
                options.setdefault("max_steps", max_steps)
                super().__init__(split=split, data=root, **options)

        class Household(household.cls):
            def __init__(self, split: str = split, **options):
                options.setdefault("max_steps", max_steps)
                super().__init__(split=split, **options)

        entries = [
            dataclasses.replace(household, name="household", factory=Household),
            dataclasses.replace(household, name=Exported.name, factory=Exported),
        ]
        with ENVS.temporary(*entries):
            out = {
                "household": evaluate_greedy(policy, "household", split, n_tasks, **settings),
                "alfworld": evaluate_greedy(policy, Exported.name, split, n_tasks, **settings),
            }
    return out


def missing_extra() -> str | None:
    """None when ALFWorld's engine imports; else the one line saying how to install it."""
    try:
        import rspo.core.envs.alfworld.engine  # noqa: F401  (alfworld, textworld, fast_downward)
    except ImportError:
        return INSTALL_LINE
    return None


def cached_household_policy():
    """The household warm start if it is already built (loaded in seconds), else None: never builds."""
    from rspo.core.sft import default_policy_path, load_or_build_default

    return load_or_build_default("household") if default_policy_path("household").is_dir() else None


def same_tasks_in_alfworld(
    n_tasks: int = 3, split: str = "valid_seen", policy=None, max_steps: int = 50, write=print
) -> dict | None:
    """The first ``n_tasks`` household tasks of ``split`` in household and in ALFWorld's engine, printed.

    1. The control: household's expert plan, replayed command by command in both engines
       (:func:`rspo.core.envs.alfworld.parity.compare`): the steps, who won, and how the observations
       compare (identical, different only in a class docs/alfworld-parity.md explains, unexplained).
    2. ``policy`` (default: the household warm start if it is already built - it is never built here)
       played greedily in both (:func:`household_vs_alfworld`).

    Without the ``alfworld`` extra it writes one line saying how to install it and returns None; with
    it, ``{"expert": [one record per task], "policy": household_vs_alfworld's dict or None, "seconds":
    {...}}``.
    """
    missing = missing_extra()
    if missing:
        write(missing)
        return None
    if n_tasks <= 0:
        write("skipped: no task asked for (n_tasks = 0)")
        return None
    from rspo.core.envs.alfworld.export import select
    from rspo.core.envs.alfworld.parity import compare

    seconds = {}
    t0 = time.perf_counter()
    specs = select(split, limit=n_tasks)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        expert = []
        for spec in specs:
            r = compare(spec, root, mode="expert")
            c = r["counts"]
            expert.append(
                {
                    "task_id": r["task_id"],
                    "type": r["type"],
                    "steps": c["obs_steps"] - 1,
                    "household_won": r["household_won"],
                    "alfworld_won": r["alfworld_won"],
                    "identical": c["obs_equal"],
                    "explained": sum(v for k, v in c.items() if k.startswith("obs:")),
                    "unexplained": len(r["unexplained"]),
                    "diverged": r["diverged"],
                }
            )
        seconds["expert"] = time.perf_counter() - t0
        yes = {True: "yes", False: "no"}
        write(f"household's expert plan, replayed command by command in both engines ({split}):")
        write(f"{'task':<18}{'type':<32}{'steps':>5}   won: household / ALFWorld   observations")
        for e in expert:
            write(
                f"{e['task_id']:<18}{e['type']:<32}{e['steps']:>5}   {yes[e['household_won']]:>14} / "
                f"{yes[e['alfworld_won']]:<10} {e['identical']} identical, {e['explained']} explained, "
                f"{e['unexplained']} unexplained"
            )
            if e["diverged"]:
                write(
                    f"  {e['task_id']}: the engines part at `{e['diverged']}` - household also cleans in a "
                    "bathtubbasin, ALFWorld only in a sinkbasin (the one explained divergence)"
                )
        name = "the given policy"
        if policy is None:
            policy, name = cached_household_policy(), "the household warm start"
        scores = None
        if policy is None:
            write(
                "the household warm start is not built on this machine, so only the expert's plan was "
                'played: rspo.core.sft.load_or_build_default("household") builds it once (3-4 min on a 2-core '
                "machine) and this cell then plays it too"
            )
        else:
            t1 = time.perf_counter()
            scores = household_vs_alfworld(policy, split, n_tasks, data=root, max_steps=max_steps)
            seconds["policy"] = time.perf_counter() - t1
            write(f"{name}, greedy, on the same {n_tasks} tasks (horizon {max_steps}):")
            for engine, label in (("household", "household"), ("alfworld", "ALFWorld")):
                s = scores[engine]
                write(
                    f"  {label:<10} success {s['success']:.0%} ({round(s['success'] * s['n_tasks'])}/"
                    f"{s['n_tasks']}), mean length {s['mean_length']:.1f}"
                )
    seconds["total"] = time.perf_counter() - t0
    write(f"({seconds['total']:.0f} s)")
    return {"expert": expert, "policy": scores, "seconds": seconds}
