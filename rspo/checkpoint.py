"""Resumable checkpoints: ``runs/<name>/checkpoint/state.pt`` (trainable weights, optimizer, counters).

A checkpoint is written to a temporary file and renamed, so a run killed while saving keeps its
previous checkpoint. Resuming checks that the saved ``config.json`` agrees with the new config on
everything that changes the result (it may differ in ``iterations``, ``resume``, ``progress``,
``eval_every``, ``checkpoint_every`` - so a run can be extended), reloads the state and drops metric
rows written after the checkpoint.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch

from rspo.config import TrainConfig

FORMAT = 1
MAY_DIFFER = {
    "iterations",
    "resume",
    "progress",
    "eval_every",
    "checkpoint_every",
    "device",
    "threads",
    "extra",
    "out_dir",  # where the run lies: the run being checked was found in the new config's run_dir
}


def _state_path(run_dir: Path) -> Path:
    return run_dir / "checkpoint" / "state.pt"


def trainable_state(policy) -> dict[str, torch.Tensor]:
    """The trainable tensors of ``policy`` by name (LoRA adapters, or all weights, + value head)."""
    return {n: p.detach().cpu().clone() for n, p in policy.named_trainable_parameters()}


def load_trainable_state(policy, state: dict[str, torch.Tensor]) -> None:
    params = dict(policy.named_trainable_parameters())
    missing = sorted(set(params) - set(state))
    if missing:
        raise ValueError(
            f"checkpoint lacks trainable parameters {missing[:5]} ...: was it saved by another model?"
        )
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(state[name].to(p.device, p.dtype))


def save_checkpoint(trainer, extra: dict | None = None) -> Path:
    path = _state_path(trainer.run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "format": FORMAT,
        "iteration": trainer.iteration,
        "env_steps": trainer.env_steps,
        "policy": trainable_state(trainer.policy),
        "optimizer": trainer.optimizer.state_dict(),
        "extra": {**getattr(trainer, "checkpoint_extra", lambda: {})(), **(extra or {})},
    }
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(trainer) -> bool:
    """Load the run's checkpoint into ``trainer``; False when there is none."""
    path = _state_path(trainer.run_dir)
    if not path.exists():
        return False
    state = torch.load(path, map_location="cpu", weights_only=False)
    if state.get("format") != FORMAT:
        raise ValueError(f"{path}: checkpoint format {state.get('format')} is not {FORMAT}")
    load_trainable_state(trainer.policy, state["policy"])
    trainer.optimizer.load_state_dict(state["optimizer"])
    trainer.iteration = state["iteration"]
    trainer.env_steps = state["env_steps"]
    by_rank = state.get("extra", {}).get("env_steps_by_rank")
    dist = getattr(trainer, "dist", None)
    if dist is not None and by_rank and len(by_rank) == dist.world:
        trainer.env_steps = by_rank[dist.rank]  # each process counts its own steps
    if hasattr(trainer, "load_checkpoint_extra"):
        trainer.load_checkpoint_extra(state.get("extra", {}))
    return True


def check_same_run(old: TrainConfig, new: TrainConfig, run_dir: Path) -> None:
    """Raise if ``new`` differs from the saved ``old`` in anything that changes the result."""
    old_d, new_d = old.to_dict(), new.to_dict()
    diff = sorted(k for k in new_d if k not in MAY_DIFFER and old_d.get(k) != new_d[k])
    if diff:
        shown = ", ".join(f"{k}: {old_d.get(k)!r} -> {new_d[k]!r}" for k in diff)
        raise ValueError(f"cannot resume {run_dir}: config differs in {shown}")


def prepare_run_dir(trainer) -> None:
    """Create ``runs/<name>/`` (refusing to overwrite a previous run) or resume it."""
    cfg: TrainConfig = trainer.cfg
    run_dir: Path = trainer.run_dir
    saved = run_dir / "config.json"
    if cfg.resume:
        if saved.exists():
            check_same_run(TrainConfig.load(saved), cfg, run_dir)
        if trainer.load_checkpoint():
            trainer.log.truncate(trainer.iteration)
        else:  # killed before its first checkpoint: start again
            trainer.log.path.unlink(missing_ok=True)
    elif run_dir.exists() and any(run_dir.iterdir()):
        raise ValueError(
            f"run directory {run_dir} already holds a run; pass resume=True (--resume) to continue it, "
            "or choose another name (--name) or out_dir"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg.save(saved)


def remove_run(run_dir: str | Path) -> None:
    """Delete a run directory (used by benchmarks that restart a run from scratch)."""
    shutil.rmtree(run_dir, ignore_errors=True)
