"""Which sampling temperature gives GRPO-style groups a learning signal? (rollouts only, no training)

    python benchmarks/bench_temperature.py [--envs shop household] [--temperatures 0.5 1 1.5 2]
        [--batches 4] [--tasks 8] [--group 4] [--max-steps 30]

For the warm-started tiny default, per environment and temperature: ``batches`` rollouts of
B tasks x G copies (the same tasks for every temperature) and

- success: mean rollout success (what the samples are worth);
- signal groups: the fraction of task groups whose copies do not all get the same outcome return -
  under the outcome reward the only groups GRPO learns from (the others have zero advantages);
- successes in signal groups: groups with at least one success and one failure (household: the
  outcome is binary, so the two columns agree; shop: returns are graded, so a group can have signal
  without a success).

A temperature too low gives identical copies (no signal); too high wastes the warm start.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from rspo.core.rewards import RewardSpec, compute_rewards
    from rspo.core.rollout import collect, make_envs
    from rspo.core.sft import load_or_build_default, prompt_settings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=["shop", "household"])
    parser.add_argument("--temperatures", nargs="+", type=float, default=[0.5, 1.0, 1.5, 2.0])
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=30, help="household horizon (shop keeps 15)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print("env        T     success  signal groups  success+failure groups  episodes")
    for env in args.envs:
        policy = load_or_build_default(env)
        settings = prompt_settings(env)
        options = {"max_steps": args.max_steps} if env == "household" else {}
        envs = make_envs(env, "train", args.tasks * args.group, **options)
        rng = random.Random(0)
        batches = [rng.sample(envs[0].task_ids, args.tasks) for _ in range(args.batches)]
        for t in args.temperatures:
            won, signal, mixed, n_groups, n_eps = 0, 0, 0, 0, 0
            for b, tasks in enumerate(batches):
                gen = torch.Generator().manual_seed(b)
                eps = collect(policy, envs, tasks, args.group, temperature=t, generator=gen, **settings)
                returns = [sum(r) for r in compute_rewards("outcome", eps, RewardSpec())]
                for g in range(args.tasks):
                    idx = [i for i, ep in enumerate(eps) if ep.group == g]
                    signal += len({round(returns[i], 6) for i in idx}) > 1
                    mixed += len({eps[i].won for i in idx}) > 1
                won += sum(ep.won for ep in eps)
                n_groups += args.tasks
                n_eps += len(eps)
            print(
                f"{env:<10} {t:<5} {100 * won / n_eps:6.1f}%  {100 * signal / n_groups:12.1f}%  "
                f"{100 * mixed / n_groups:21.1f}%  {n_eps:8d}",
                flush=True,
            )


if __name__ == "__main__":
    main()
