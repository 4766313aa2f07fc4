"""Run by tests/test_distributed.py under ``torchrun --nproc_per_node 2``: two CPU processes train one
policy; rank 0 writes what the test checks to ``<out>/result.json``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from tiny_fixtures import with_successes  # tests/ is this script's folder

import rspo.core.rewards
from rspo.core.config import TrainConfig
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.trainer import Trainer


def main(out: str, reward: str) -> None:
    torch.set_num_threads(1)
    modes = rspo.core.rewards.REWARD_MODES
    for name in ("outcome", "dense"):
        modes.register(rspo.core.rewards.RewardMode(name, with_successes(modes[name].function)), replace=True)
    cfg = TrainConfig(
        env="household",
        reward=reward,
        iterations=2,
        tasks_per_iter=4,
        group_size=2,
        max_steps=4,
        temperature=20.0,
        eval_every=2,
        eval_tasks=3,
        checkpoint_every=1,
        out_dir=out,
        name="ddp",
        progress=False,
        lr=1e-3,
        micro_batch=8,
        minibatch_turns=4,
    )
    policy = untrained_tiny_policy(0)
    before = torch.cat([p.detach().flatten() for p in policy.trainable_parameters()])
    trainer = Trainer(cfg, policy=policy)
    rows = trainer.run()
    after = torch.cat([p.detach().flatten() for p in policy.trainable_parameters()])
    sums = trainer.dist.gather([float(after.double().sum()), float((after - before).abs().sum())])
    if trainer.dist.main:
        result = {"world": trainer.dist.world, "rows": rows, "param_sums": sums}
        Path(out, "result.json").write_text(json.dumps(result))
    if torch.distributed.is_initialized():
        # leave together and close the gloo group: a process that exits with the group's threads still
        # running can abort ("terminate called without an active exception"; seen once in ~9 runs)
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
