"""Data parallelism for ``accelerate launch`` / ``torchrun``: one process per device (docs/design.md §8).

Each process holds the whole policy, rolls out its share of every iteration's tasks (task k goes to
process ``k % world``, with all G copies, so group normalisation stays local), and computes its loss
on its own turns; gradients are averaged across processes before every optimizer step, so the
weights stay identical everywhere. Process 0 writes metrics and checkpoints; evaluation tasks are
split the same way and gathered. In one process (the default) every method here is a no-op.

GPUs: ``accelerate launch --multi_gpu --num_processes N -m rspo.cli train ...`` (Accelerate's
``PartialState`` sets up NCCL and the device). CPUs: ``torchrun --nproc_per_node N -m rspo.cli train
...`` (gloo; how the test exercises it on a CPU machine).
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist


class Dist:
    """Rank, world size and device of this process, and the few collectives the trainer needs."""

    def __init__(self):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if self.world > 1 and not dist.is_initialized():
            from accelerate import PartialState

            PartialState()  # under accelerate launch / torchrun with GPUs: NCCL, device per process
            if not dist.is_initialized():  # CPU processes: accelerate leaves them alone
                dist.init_process_group("gloo")

    @property
    def active(self) -> bool:
        return self.world > 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    def device(self, cuda: bool) -> torch.device:
        return torch.device(
            f"cuda:{self.local_rank}" if cuda and self.active else ("cuda" if cuda else "cpu")
        )

    def share(self, items: list) -> list:
        """This process's share of ``items`` (every ``world``-th, from its rank)."""
        return items[self.rank :: self.world] if self.active else list(items)

    def max_int(self, n: int) -> int:
        if not self.active:
            return n
        t = torch.tensor([n], dtype=torch.long)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return int(t)

    def gather(self, obj) -> list:
        """``obj`` of every process, in rank order (one process: ``[obj]``)."""
        if not self.active:
            return [obj]
        out = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def average_grads(self, params: list[torch.nn.Parameter]) -> None:
        """Average gradients across processes (missing ones count as zero)."""
        if not self.active:
            return
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1).float() for g in grads])
        if dist.get_backend() == "nccl":
            flat = flat.cuda()
        dist.all_reduce(flat)
        flat /= self.world
        offset = 0
        for p, g in zip(params, grads, strict=True):
            n = g.numel()
            p.grad = flat[offset : offset + n].view_as(g).to(p.device, g.dtype)
            offset += n

    def barrier(self) -> None:
        if self.active:
            dist.barrier()


def merge_metrics(rows: list[dict]) -> dict:
    """One metrics row from every process's row: means, except counts, which add up."""
    if len(rows) == 1:
        return rows[0]
    sums = (
        "rollout/episodes",
        "rollout/turns",
        "rollout/env_steps",
        "rollout/no_signal_groups",
        "swap/turns",
        "swap/tokens",
        "swap/episodes",
        "swap/successes",
        "swap/trained_successes",
    )
    out = {}
    for key, value in rows[0].items():
        values = [r[key] for r in rows if key in r]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            out[key] = value
        elif key in sums:
            out[key] = sum(values)
        elif key.endswith("_max"):
            out[key] = max(values)
        elif key in (
            "swap/is_ratio_mean",
            "swap/truncated_frac",
            "swap/is_weight_mean",
        ):  # over trained turns
            turns = [r.get("swap/turns", 0) for r in rows if key in r]
            out[key] = sum(v * n for v, n in zip(values, turns, strict=True)) / max(sum(turns), 1)
        else:
            out[key] = sum(values) / len(values)
    return out
