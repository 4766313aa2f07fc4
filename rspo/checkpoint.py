"""Resumable checkpoints: ``runs/<name>/checkpoint/state.pt`` (trainable weights, optimizer, counters).

A checkpoint is written to a temporary file, flushed and renamed (:mod:`rspo.atomic`), so a run
killed while saving keeps its previous checkpoint. It holds only tensors and plain data (dicts,
lists, tuples, strings, numbers, bools, None: the replay buffer's episodes as dicts) and is read with
``torch.load(weights_only=True)``, which builds no other Python object: a checkpoint shared by
someone else cannot run code on ``--resume``. A file that needs more (format 1, written before this,
pickled the buffer's ``Episode`` objects; or a planted pickle) is refused with an error. Weights that
are not finite are never written (:func:`save_checkpoint` refuses them). Resuming checks that the saved
``config.json`` agrees with the new config on everything that changes the result (it may differ in
``iterations``, ``resume``, ``progress``, ``eval_every``, ``checkpoint_every`` - so a run can be
extended); where ``config.json`` was deleted, the config the checkpoint records (``state["config"]``)
is compared instead, and a checkpoint that records none is refused. It then reloads the state and drops
metric rows written after the checkpoint. :func:`check_run_dir` makes these checks without writing
anything, for ``rspo train`` to call before it loads a model.
"""

from __future__ import annotations

import json
import pickle
import re
import shutil
from pathlib import Path

import torch

from rspo.atomic import LOCK_NAME, atomic_path, remove_partial_files
from rspo.config import TrainConfig

FORMAT = 2  # 1: pickled Python objects (loaded with weights_only=False); 2: weights-only
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


_PLAIN = (str, int, float, bool, type(None))


def check_plain(obj, where: str = "state") -> None:
    """Raise TypeError unless ``obj`` is tensors and plain data only (what ``weights_only`` loads)."""
    if isinstance(obj, (torch.Tensor, *_PLAIN)):
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, _PLAIN):
                raise TypeError(f"checkpoint {where}: key {k!r} is a {type(k).__name__}, not plain data")
            check_plain(v, f"{where}[{k!r}]")
        return
    if isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            check_plain(v, f"{where}[{i}]")
        return
    raise TypeError(
        f"checkpoint {where} is a {type(obj).__name__}: a checkpoint holds only tensors and plain data"
    )


def _check_finite(tensors: dict[str, torch.Tensor], what: str, iteration: int) -> None:
    for name, t in tensors.items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise RuntimeError(
                f"refusing to write a checkpoint at iteration {iteration}: {what} parameter {name} "
                "is not finite (nan/inf); the last checkpoint on disk is kept"
            )


def save_checkpoint(trainer, extra: dict | None = None) -> Path:
    path = _state_path(trainer.run_dir)
    state = {
        "format": FORMAT,
        "iteration": trainer.iteration,
        "env_steps": trainer.env_steps,
        "policy": trainable_state(trainer.policy),
        "optimizer": trainer.optimizer.state_dict(),
        "extra": {**getattr(trainer, "checkpoint_extra", lambda: {})(), **(extra or {})},
    }
    cfg = getattr(trainer, "cfg", None)
    if isinstance(cfg, TrainConfig):  # what a resume compares with when config.json is gone
        state["config"] = cfg.to_dict()
    _check_finite(state["policy"], "policy", trainer.iteration)
    if isinstance(state["extra"].get("explorer"), dict):
        _check_finite(state["extra"]["explorer"], "explorer", trainer.iteration)
    check_plain(state)
    with atomic_path(path) as tmp:
        torch.save(state, tmp)
    return path


def _foreign_globals(path: Path) -> list[str]:
    """The classes and functions a pickle (bare or in torch's zip) names, torch's own aside - read
    from its opcodes, without running it."""
    import pickletools
    import zipfile

    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                data = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
        else:
            data = path.read_bytes()
        names, strings = [], []
        for op, arg, _ in pickletools.genops(data):
            if op.name == "GLOBAL":  # protocol 2 spells builtins "__builtin__"
                names.append(arg.replace(" ", ".").replace("__builtin__.", "builtins."))
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                names.append(".".join(strings[-2:]))
            if isinstance(arg, str):
                strings.append(arg)
    except Exception:  # not a pickle we can read: say nothing more
        return []
    return [n for n in names if not n.startswith(("torch.", "collections.OrderedDict", "_codecs."))]


def read_checkpoint(path: str | Path) -> dict:
    """The checkpoint at ``path``, loaded with ``weights_only=True``; a one-line ValueError for a
    file that is not a safe checkpoint of this format (old, planted or damaged)."""
    path = Path(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        found = re.search(r"GLOBAL (\S+)", str(e))
        names = _foreign_globals(path) or ([found.group(1)] if found else [])
        what = f"the Python object {names[0]}" if names else "Python objects other than tensors"
        raise ValueError(
            f"{path}: refusing to load this checkpoint: it holds {what}, which could run code when "
            f"loaded; format {FORMAT} checkpoints hold only tensors and plain data. If it is an old "
            "(format 1) checkpoint of your own, it is unsafe to load: start the run again without "
            "--resume, or in another folder"
        ) from None
    except (RuntimeError, EOFError, OSError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(
            f"{path}: cannot read the checkpoint (damaged or not a checkpoint): {first}"
        ) from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        old = isinstance(found, int) and found < FORMAT
        raise ValueError(
            f"{path}: checkpoint format {found!r} is not {FORMAT}"
            + (": an old format, unsafe to load (it may hold pickled Python objects)" if old else "")
            + "; start the run again without --resume, or in another folder"
        )
    return state


def load_checkpoint(trainer) -> bool:
    """Load the run's checkpoint into ``trainer``; False when there is none."""
    path = _state_path(trainer.run_dir)
    if not path.exists():
        return False
    state = read_checkpoint(path)
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


def check_same_run(old: TrainConfig, new: TrainConfig, run_dir: Path, source: str = "") -> None:
    """Raise if ``new`` differs from the saved ``old`` in anything that changes the result
    (``source``: where ``old`` was read, when not the run's config.json)."""
    old_d, new_d = old.to_dict(), new.to_dict()
    diff = sorted(k for k in new_d if k not in MAY_DIFFER and old_d.get(k) != new_d[k])
    if diff:
        shown = ", ".join(f"{k}: {old_d.get(k)!r} -> {new_d[k]!r}" for k in diff)
        raise ValueError(f"cannot resume {run_dir}: config differs in {shown}{source}")


def check_resume(cfg: TrainConfig, run_dir: Path) -> None:
    """Raise unless resuming ``run_dir`` with ``cfg`` continues the same run: ``cfg`` is compared with
    the run's ``config.json`` or, where that file was deleted, with the config its checkpoint records
    (format 2 checkpoints written before they recorded it: refused, since a changed seed or lr could
    not be told). Nothing saved at all: nothing to compare, the run starts from the beginning."""
    saved = run_dir / "config.json"
    if saved.exists():
        try:
            old = TrainConfig.load(saved)
        except json.JSONDecodeError as e:
            raise ValueError(
                f"cannot resume {run_dir}: {saved} is damaged ({e.msg} at line {e.lineno}); put the run's "
                "config.json back, or delete it to compare with the config its checkpoint records"
            ) from None
        check_same_run(old, cfg, run_dir)
        return
    path = _state_path(run_dir)
    if not path.exists():
        return
    recorded = read_checkpoint(path).get("config")
    if not isinstance(recorded, dict):
        raise ValueError(
            f"cannot resume {run_dir}: its config.json is missing and its checkpoint does not record "
            "the config, so a changed seed or lr could not be detected; put the run's config.json back, "
            "or start the run again without --resume (in another folder, or after deleting this one)"
        )
    check_same_run(
        TrainConfig.from_dict(recorded), cfg, run_dir, " (from the checkpoint: config.json is missing)"
    )


def _holds_a_run(run_dir: Path) -> bool:
    return run_dir.is_dir() and any(p.name != LOCK_NAME for p in run_dir.iterdir())


def check_run_dir(cfg: TrainConfig, must_exist: bool = False) -> None:
    """What :func:`prepare_run_dir` will refuse, checked without writing anything - ``rspo train``
    calls it before loading any model, so a bad run folder is a one-line error at once: ``out_dir``
    or the run folder a file, a folder that cannot be written, a run there already (without
    ``resume``), a resume with another config. With ``must_exist`` (``rspo train --resume``) a missing
    run folder is an error too; the library's ``resume=True`` starts a missing run (benchmarks and
    :func:`rspo.experiments.ensure_run` rely on that)."""
    import os

    run_dir = cfg.run_dir
    for path, flag in ((Path(cfg.out_dir), "--out-dir"), (run_dir, "--name")):
        if path.exists() and not path.is_dir():
            raise ValueError(f"{path} is a file, not a folder; choose another {flag}")
    existing = run_dir
    while not existing.exists() and existing != existing.parent:  # the nearest folder there is
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"{existing} is a file, not a folder; choose another --out-dir")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write in {existing} (permission denied); choose another --out-dir")
    if cfg.resume:
        if not run_dir.is_dir():
            if must_exist:
                raise ValueError(
                    f"cannot resume {run_dir}: no such run folder; drop --resume to start this run, "
                    "or check --name and --out-dir"
                )
            return
        check_resume(cfg, run_dir)
    elif _holds_a_run(run_dir):
        raise _holds_a_run_error(run_dir)


def _holds_a_run_error(run_dir: Path) -> ValueError:
    return ValueError(
        f"run directory {run_dir} already holds a run; pass resume=True (--resume) to continue it, "
        "or choose another name (--name) or out_dir"
    )


def prepare_run_dir(trainer) -> None:
    """Create ``runs/<name>/`` (refusing to overwrite a previous run) or resume it. Call it holding
    the run's lock (:class:`rspo.atomic.RunLock`): resuming rewrites the metrics."""
    cfg: TrainConfig = trainer.cfg
    run_dir: Path = trainer.run_dir
    saved = run_dir / "config.json"
    if cfg.resume:
        for folder in (run_dir, run_dir / "checkpoint"):  # temporary files of writes a kill cut
            remove_partial_files(folder)
        check_resume(cfg, run_dir)
        if trainer.load_checkpoint():
            trainer.log.truncate(trainer.iteration)
        else:  # killed before its first checkpoint: start again
            trainer.log.path.unlink(missing_ok=True)
    elif _holds_a_run(run_dir):
        raise _holds_a_run_error(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(saved) as tmp:
        cfg.save(tmp)


def remove_run(run_dir: str | Path) -> None:
    """Delete a run directory (used by benchmarks that restart a run from scratch)."""
    shutil.rmtree(run_dir, ignore_errors=True)
