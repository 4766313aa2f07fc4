"""Environment speed: steps/s of a random-admissible-action loop, one core.

    python benchmarks/bench_envs.py [--seconds 5] [--envs detour household shop]

The loop is what RL rollouts do to an environment: reset, then step with a random action from
``info["admissible_actions"]`` (read from the info of every step), resetting when an episode ends.
Resets count in the time. Targets (issues 2, 17): household >= 5,000 steps/s, shop >= 1,000 steps/s
(searches included), detour (the credit-assignment lab) >= 50,000 steps/s. For scale, measured on a 2-core machine: the real ALFWorld engine about 60
steps/s (a 3-receptacle hand-made problem), a small TextWorld game about 700 steps/s.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time

import rspo.envs

TARGETS = {"household": 5_000, "shop": 1_000, "detour": 50_000}


def bench(name: str, seconds: float, seed: int = 0) -> dict:
    env = rspo.envs.make(name, split="train")
    rng = random.Random(seed)
    env.reset(seed=seed)  # warm caches (search index, layouts) outside the timed loop
    steps = episodes = searches = 0
    obs, info = env.reset(seed=seed)
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(200):
            action = rng.choice(info["admissible_actions"])
            searches += action.startswith("search[")
            obs, reward, terminated, truncated, info = env.step(action)
            steps += 1
            if terminated or truncated:
                episodes += 1
                obs, info = env.reset()
    return {
        "env": name,
        "steps": steps,
        "episodes": episodes,
        "searches": searches,
        "seconds": elapsed,
        "steps_per_s": steps / elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="timed seconds per environment")
    parser.add_argument("--envs", nargs="+", default=rspo.envs.list_envs())
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores (pinned to one)"
    )
    print(
        f"{'env':10s} {'steps/s':>10s} {'target':>8s} {'steps':>9s} {'episodes':>9s} {'searches':>9s}  verdict"
    )
    for name in args.envs:
        r = bench(name, args.seconds)
        target = TARGETS.get(name, 0)
        verdict = "ok" if r["steps_per_s"] >= target else "BELOW TARGET"
        print(
            f"{name:10s} {r['steps_per_s']:>10,.0f} {target:>8,d} {r['steps']:>9,d} {r['episodes']:>9,d} "
            f"{r['searches']:>9,d}  {verdict}"
        )


if __name__ == "__main__":
    main()
