"""Profiles: one place for what each profile is (docs/design.md §9), standard library and the config only.

A profile is a training scale and, for ``rspo reproduce --profile NAME``, what its notebooks get:

- :data:`TRAIN_PROFILES`: per profile, TrainConfig settings for every environment (``"common"``) and
  each environment's own on top (``"<env>"``; a ``by_reward`` key holds one reward mode's settings);
  :func:`profile_settings` merges them for one run. The profiles: ``quick``, ``cpu``, ``gpu``,
  ``lab``, ``smoke``; :data:`LAB` and :data:`QUICK_LAB` are the lab's.
- :data:`PROFILES`: the parameters ``rspo reproduce`` injects into each notebook (``"*"`` for every
  notebook, then per notebook stem; ``"profile"`` names the training scale), with
  :data:`PROFILE_NOTES` (the CLI's help, the report), :data:`TRAIN_WORKERS`, :data:`SHARED_RUNS`
  and :data:`TABLE_NOTEBOOK`;
- the run lists the tables share: :data:`BASE_ALGOS`, :data:`VARIANT_ABLATIONS`,
  :data:`CPU_ABLATIONS`, :data:`LAB_ABLATIONS`.

:mod:`rspo.study.experiments` turns a profile into runs (``run_config``, ``grid_configs``) and trains them;
``benchmarks/bench_learning.py``, ``rspo train --profile`` and ``rspo reproduce`` read this module.
"""

from __future__ import annotations

from rspo.core.config import TrainConfig
from rspo.core.paths import CHECKOUT as ROOT
from rspo.core.registry import SWAP_VARIANTS

# the credit-assignment lab's settings (issue 17, docs/lab/protocol.md): detour only; 8 tasks x 4
# copies (a group of 8 let the outcome learner find its first successes at once: docs/lab/README.md),
# lr 1e-3 (the tiny model from a uniform-play warm start), evaluation every 6 iterations for the curves
LAB = dict(
    iterations=30,
    tasks_per_iter=8,
    group_size=4,
    lr=1e-3,
    kl_coef=0.0,
    micro_batch=64,
    no_signal="skip",
    threads=1,
    eval_every=6,
    eval_tasks=64,
)

# the quick profile's lab (make reproduce, notebook 00): study 2's chosen setting L7-m0.15-ms1
# (docs/lab/protocol-2.md: 7 rooms, m = 0.15, milestones paid 1.0, 60 iterations), where the premise
# gate passed - outcome is slow and dense is biased - so a student sees both happen and what RSPO
# does there. RSPO in its budget-matched form (learner and explorer take half of the iteration's
# tasks each), so that its runs sample the baselines' environment steps per iteration and equal
# iterations are equal steps. Outcome runs as study 2's do, without the process reward's knobs (it
# pays none of them). tests/test_experiments.py keeps every run equal to rspo.study.study2's at its seed.
QUICK_LAB = dict(
    LAB,
    iterations=60,
    misalignment=0.15,
    env_options={"length": 7, "milestones": 1.0},
    by_reward={
        "outcome": {"misalignment": 0.0, "env_options": {"length": 7}},
        "rspo": {"swap_budget": "matched"},
    },
)

# per profile: settings for every environment ("common") on top of TrainConfig's defaults, then each
# environment's own on top of those
TRAIN_PROFILES: dict[str, dict[str, dict]] = {
    # the whole story at small scale (make reproduce): the lab at study 2's chosen setting (QUICK_LAB
    # above), where outcome is slow and dense is biased; household and shop at toy scale for the
    # notebooks' env parameter
    "quick": {
        "common": dict(iterations=4, tasks_per_iter=4, group_size=2, no_signal="skip", threads=1),
        "household": dict(max_steps=20, eval_tasks=32),
        "shop": dict(eval_tasks=32),
        "detour": QUICK_LAB,
    },
    # the CPU table: at most 15 minutes per run on a 2-core machine, two runs at a time. Sized by the
    # slowest combination, PPO + RSPO in household (two policies, PPO trains every turn): no KL term
    # (kl_coef 0, as DAPO and Dr. GRPO drop it; the other profiles keep 0.01), 4 replayed groups per
    # RSPO update, household horizon 20 (the warm start's success: 10.2% against 10.9% at 30; the
    # expert needs 9 steps on average, at most 20 on valid_seen) and 8 iterations. docs/results.md
    # "Does every method learn?" has the measurements behind these choices.
    "cpu": {
        "common": dict(
            tasks_per_iter=8, group_size=4, no_signal="skip", threads=1, kl_coef=0.0, replay_groups=4
        ),
        "household": dict(iterations=8, max_steps=20, eval_tasks=64),
        "shop": dict(iterations=24, eval_tasks=128),
    },
    # one GPU, a 0.5-1.5B instruct model with LoRA in generate mode (GiGPO's scale, fewer iterations)
    "gpu": {
        "common": dict(
            model="Qwen/Qwen2.5-1.5B-Instruct",
            lora=True,
            action_mode="generate",
            tasks_per_iter=16,
            group_size=8,
            iterations=60,
            lr=1e-5,
            micro_batch=8,
            minibatch_turns=128,
        ),
        "household": dict(eval_tasks=128),
        "shop": dict(eval_tasks=128),
    },
    # the credit-assignment lab (LAB above); m from --set misalignment=...
    "lab": {"common": LAB, "detour": {}},
    # seconds: for testing the scripts that run profiles
    "smoke": {
        "common": dict(iterations=2, tasks_per_iter=2, group_size=2, no_signal="skip", threads=1),
        "household": dict(max_steps=6, eval_tasks=4),
        "shop": dict(max_steps=4, eval_tasks=4),
        "detour": dict(eval_tasks=8),
    },
}


def profile_settings(profile: str, env: str, reward: str) -> dict:
    """A profile's TrainConfig settings for ``env`` and ``reward``: the profile's common ones, then the
    environment's, then those of the reward mode (``by_reward``). An environment the profile does not
    name gets the common ones (an unknown env: TrainConfig names the choices)."""
    if profile not in TRAIN_PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of: {', '.join(TRAIN_PROFILES)}")
    table = TRAIN_PROFILES[profile]
    base = {**table["common"], **table.get(env, {})}
    by_reward = base.pop("by_reward", {})  # settings of one reward mode only (e.g. RSPO's swap_budget)
    return {**base, **by_reward.get(reward, {})}


# per profile: parameters for every notebook ("*") and per notebook stem; a notebook gets only the
# parameters its parameters cell declares. "profile" names the training scale (TRAIN_PROFILES above).
BASE_ALGOS = ["grpo", "ppo", "gigpo"]
# one ablation row per RSPO variant besides the default (rspo.core.registry.SWAP_VARIANTS: mixed, schedule)
VARIANT_ABLATIONS = [{"swap_variant": v} for v in SWAP_VARIANTS if v != TrainConfig.swap_variant]
CPU_ABLATIONS = VARIANT_ABLATIONS + [
    {"swap_lambda": 0.5},
    {"swap_lambda": 2.0},
    {"swap_c": 2.0},
]
# the lab's ablation rows (docs/lab/protocol.md, "Ablations"): the same list, on GRPO at m = 0.1
LAB_ABLATIONS = CPU_ABLATIONS
PROFILES: dict[str, dict[str, dict]] = {
    # the lab (detour) at study 2's chosen setting on GRPO, two seeds: outcome slow, dense biased,
    # where RSPO ends
    "quick": {
        "*": {
            "profile": "quick",
            "interactive": False,
            "envs": ["detour"],
            "algos": ["grpo"],
            "seeds": [0, 1],
            "ablations": [],
        },
        "00_quickstart": {"env_name": "detour"},
        "06_gpu_colab": {"env_name": "detour"},
    },
    "cpu": {
        "*": {
            "profile": "cpu",
            "interactive": False,
            "envs": ["household", "shop"],
            "algos": BASE_ALGOS,
            "seeds": [0, 1, 2],
        },
        "00_quickstart": {"env_name": "shop"},
        "01_environments_and_rewards": {"episodes_per_env": 200},
        "05_analysis": {"ablations": CPU_ABLATIONS},
    },
}
# training runs at a time when rspo reproduce trains a profile's table before its notebooks (each run
# uses one thread in these profiles; the gpu profile trains one run at a time)
TRAIN_WORKERS = {"quick": 2, "smoke": 2, "cpu": 2}
# the gpu profile: the cpu profile's notebooks and table on a GPU, with the two swap variants as ablations
PROFILES["gpu"] = {nb: dict(values) for nb, values in PROFILES["cpu"].items()}
PROFILES["gpu"]["*"]["profile"] = "gpu"
PROFILES["gpu"]["05_analysis"] = {"ablations": VARIANT_ABLATIONS}
# the quick profile's notebooks at the smoke training scale (2 iterations), with two ablations so that
# notebook 05's ablation path runs too: the pipeline in about 3 minutes, for the test suite
PROFILES["smoke"] = {nb: dict(values) for nb, values in PROFILES["quick"].items()}
PROFILES["smoke"]["*"].update(profile="smoke", exercises="solutions")  # every exercise's check must pass
PROFILES["smoke"]["05_analysis"] = {"ablations": VARIANT_ABLATIONS}
# one task of notebook 01's real-engine section where the alfworld extra is installed (20-35 s for 3)
PROFILES["smoke"]["01_environments_and_rewards"] = {"alfworld_tasks": 1}
# where a profile's training runs live: the cpu profile shares benchmarks/bench_learning.py's runs
SHARED_RUNS = {"cpu": ROOT / "runs" / "bench-learning" / "cpu"}
# the notebook that reads every run of a profile's table (its envs x algos x seeds: table_parameters)
TABLE_NOTEBOOK = "05_analysis"
PROFILE_NOTES = {
    "quick": "the credit-assignment lab at study 2's chosen setting (detour, 7 rooms, m = 0.15) on GRPO, "
    "two seeds: outcome slow, dense biased, where RSPO ends",
    "smoke": "the quick profile's notebooks at 2 training iterations: a check of the pipeline, no result "
    "(the test suite runs it)",
    "cpu": "the full CPU table, 3 seeds, resumable run by run (at most 6 hours of a 2-core machine)",
    "gpu": "one 24-80 GB GPU with a 0.5-1.5B instruct model",
}
