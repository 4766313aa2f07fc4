"""One pilot run of the credit-assignment lab (``detour``), as docs/lab/README.md reports them.

    python benchmarks/lab_pilot.py --reward outcome|dense [--m 0.0] [--it 24] [--seed 0] [--tasks 8]
        [--group 8] [--lr 1e-3] [--out runs/lab-pilot]

GRPO from the lab's warm start (built once, about 1.5 minutes), 8 tasks x 8 copies per iteration
and lr 1e-3 unless told otherwise, no KL term, one step of history, no admissible list, groups without signal skipped, greedy
evaluation on 64 test tasks every ``it // 5`` iterations. Prints one line per iteration and the CPU
seconds. Not the protocol: these settings are a pilot (see the README).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rspo.core.config import TrainConfig  # noqa: E402
from rspo.core.trainer import Trainer  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reward", default="outcome", choices=["outcome", "dense", "rspo"])
    p.add_argument("--algo", default="grpo")
    p.add_argument("--m", type=float, default=0.0)
    p.add_argument("--it", type=int, default=24)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tasks", type=int, default=8, help="tasks per iteration")
    p.add_argument("--group", type=int, default=8, help="copies of each task (the GRPO group)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--out", default="runs/lab-pilot")
    a = p.parse_args()
    torch.set_num_threads(1)
    cfg = TrainConfig(
        env="detour",
        algo=a.algo,
        reward=a.reward,
        misalignment=a.m,
        iterations=a.it,
        lr=a.lr,
        tasks_per_iter=a.tasks,
        group_size=a.group,
        seed=a.seed,
        history=1,
        show_admissible="no",
        micro_batch=64,
        no_signal="skip",
        eval_every=max(1, a.it // 5),
        eval_tasks=64,
        checkpoint_every=a.it,
        progress=False,
        threads=1,
        kl_coef=0.0,
        out_dir=a.out,
        name=f"{a.algo}-{a.reward}-m{a.m:g}-t{a.tasks}g{a.group}-lr{a.lr:g}-s{a.seed}",
    )
    t0 = time.process_time()
    Trainer(cfg).run()
    for line in (cfg.run_dir / "metrics.jsonl").read_text().splitlines():
        r = json.loads(line)
        print(
            f"iteration {r['iteration']:3d}  rollout success {r.get('rollout/success', float('nan')):.2f}  "
            f"process return {r.get('rollout/process_return', float('nan')):.2f}  eval {r.get('eval/success')}"
        )
    print(f"CPU seconds: {time.process_time() - t0:.0f}")


if __name__ == "__main__":
    main()
