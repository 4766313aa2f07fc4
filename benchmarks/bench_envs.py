"""Environment speed: steps/s of a random-admissible-action loop, one core.

    python benchmarks/bench_envs.py [--seconds 5] [--envs detour household shop] [--real alfworld textworld]

The loop is what RL rollouts do to an environment: reset, then step with a random action from
``info["admissible_actions"]`` (read from the info of every step), resetting when an episode ends.
Resets count in the time. Targets (issues 2, 17): household >= 5,000 steps/s, shop >= 1,000 steps/s
(searches included), detour (the credit-assignment lab) >= 50,000 steps/s. For scale, measured on a 2-core machine: the real ALFWorld engine about 60
steps/s (a 3-receptacle hand-made problem), a small TextWorld game about 700 steps/s.

The real engines are measured beside the built-ins when their extras are installed (a line says so
when not): ``alfworld`` on six household tasks exported to ALFWorld games (one per task type, a
household-sized room each; every game loaded once before the timed loop, whose first load - Fast
Downward's translation - is reported apart; then the same loop again without the kit's cache of
TextWorld's grammar parses, for the ratio), ``textworld`` on one small game made with ``tw-make``.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import tempfile
import time
from pathlib import Path

import rspo.core.envs

TARGETS = {"household": 5_000, "shop": 1_000, "detour": 50_000}
REAL = ("alfworld", "textworld")


def bench(name: str, seconds: float, seed: int = 0, env=None, chunk: int = 200) -> dict:
    env = env if env is not None else rspo.core.envs.make(name, split="train")
    rng = random.Random(seed)
    env.reset(seed=seed)  # warm caches (search index, layouts) outside the timed loop
    steps = episodes = searches = 0
    obs, info = env.reset(seed=seed)
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(chunk):
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


def real_env(name: str, folder: Path):
    """The real engine ``name`` on games made in ``folder``; None (and a line) when its extra is missing."""
    import importlib.util

    if importlib.util.find_spec(name) is None:
        print(f"{name:10s} skipped: not installed (pip install -e .[{name}])")
        return None
    if name == "alfworld":
        from rspo.core.envs.alfworld import AlfworldEnv
        from rspo.core.envs.alfworld.export import export_tasks

        export_tasks(folder, "valid_seen", per_type=1)
        env = AlfworldEnv(split="valid_seen", data=folder)
        start = time.perf_counter()
        for task_id in env.task_ids:  # the first load of each game translates it (cached after)
            env.reset(task_id=task_id)
        print(f"{name:10s} first load of a game: {(time.perf_counter() - start) / len(env):.1f} s (6 games)")
        return env
    import shutil
    import subprocess
    import sys

    from rspo.core.envs.textworld import TextWorldEnv

    exe = shutil.which("tw-make") or str(Path(sys.executable).with_name("tw-make"))
    cmd = [exe, "custom", "--world-size", "5", "--nb-objects", "10", "--quest-length", "5", "--seed", "1"]
    subprocess.run(cmd + ["--output", str(folder / "g1.z8"), "-f", "--silent"], check=True)
    return TextWorldEnv(split="train", games=folder)


def print_real(r: dict, note: str) -> None:
    """One row of a real engine's loop (no target; it makes no searches)."""
    print(
        f"{r['env']:10s} {r['steps_per_s']:>10,.1f} {'-':>8s} {r['steps']:>9,d} {r['episodes']:>9,d} {0:>9,d}  {note}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="timed seconds per environment")
    parser.add_argument("--envs", nargs="+", default=[n for n in rspo.core.envs.list_envs() if n not in REAL])
    parser.add_argument(
        "--real", nargs="*", default=list(REAL), help="real engines (skipped if not installed)"
    )
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
    for name in args.real:
        with tempfile.TemporaryDirectory() as tmp:
            env = real_env(name, Path(tmp))
            if env is None:
                continue
            r = bench(name, args.seconds, env=env, chunk=1)
            print_real(r, "(real engine)")
            if name == "alfworld":  # beside it, the same loop with TextWorld's own parsing every step
                from rspo.core.envs.alfworld import engine

                engine.uninstall_grammar_cache()
                try:
                    slow = bench(name, args.seconds, env=env, chunk=1)
                finally:
                    engine.install_grammar_cache()
                ratio = r["steps_per_s"] / slow["steps_per_s"]
                print_real(slow, f"(without the grammar cache: {ratio:.2f}x slower)")


if __name__ == "__main__":
    main()
