"""Baselines over the environment contract: the scripted expert and random policies, and an episode runner.

Used by `rspo demo`, `rspo play --expert`, the benchmarks and the tests; a scripted policy is a
callable ``policy(env, observation, info) -> action``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rspo.core.envs.base import TextEnv

Policy = Callable[[TextEnv, str, dict[str, Any]], str]


def expert_policy(env: TextEnv, observation: str, info: dict[str, Any]) -> str:
    """The environment's planner."""
    return env.expert_action()


def random_policy(seed: int = 0) -> Policy:
    """Uniform over ``info["admissible_actions"]``, from its own seeded generator."""
    rng = random.Random(seed)

    def act(env: TextEnv, observation: str, info: dict[str, Any]) -> str:
        return rng.choice(info["admissible_actions"])

    return act


@dataclass
class EpisodeStats:
    """What one episode of a scripted policy gave."""

    task_id: str
    won: bool
    outcome_reward: float  # sum of the environment's (outcome) rewards
    process_return: float  # sum of info["process_reward"]
    progress: float  # final info["progress"]
    steps: int
    invalid: int  # steps with valid=False


def run_episode(
    env: TextEnv, policy: Policy, task_id: str | None = None, seed: int | None = None
) -> EpisodeStats:
    """Play one episode of ``policy`` on ``env`` to termination or truncation."""
    obs, info = env.reset(seed=seed, task_id=task_id)
    outcome = process = 0.0
    invalid = 0
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(policy(env, obs, info))
        outcome += reward
        process += info["process_reward"]
        invalid += not info["valid"]
        done = terminated or truncated
    return EpisodeStats(
        env.task_id, bool(info["won"]), outcome, process, float(info["progress"]), env.steps, invalid
    )


def play_tasks(
    env: TextEnv, policy: Policy, task_ids: Iterable[str], progress_bar: bool = False
) -> dict[str, float]:
    """Run ``policy`` once on each task; return success rate, mean outcome, steps and steps/s."""
    task_ids = list(task_ids)
    if progress_bar:
        from tqdm.auto import tqdm

        task_ids = tqdm(task_ids, desc=f"{env.name}/{env.split}", leave=False)
    start = time.perf_counter()
    stats = [run_episode(env, policy, task_id=t) for t in task_ids]
    elapsed = time.perf_counter() - start
    n = max(len(stats), 1)
    steps = sum(s.steps for s in stats)
    return {
        "episodes": len(stats),
        "success": sum(s.won for s in stats) / n,
        "outcome_reward": sum(s.outcome_reward for s in stats) / n,
        "process_return": sum(s.process_return for s in stats) / n,
        "progress": sum(s.progress for s in stats) / n,
        "steps": steps / n,
        "invalid": sum(s.invalid for s in stats) / n,
        "steps_per_s": steps / elapsed if elapsed > 0 else float("inf"),
    }
