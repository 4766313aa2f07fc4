"""Resumable checkpoints: ``runs/<name>/checkpoint/state.pt`` (trainable weights, optimizer, counters).

A checkpoint is written to a temporary file, flushed and renamed (:mod:`rspo.core.atomic`), so a run
killed while saving keeps its previous checkpoint. It holds only tensors and plain data (dicts,
lists, tuples, strings, numbers, bools, None: the replay buffer's episodes as dicts) and is read with
``torch.load(weights_only=True)``, which builds no other Python object: a checkpoint shared by
someone else cannot run code on ``--resume``. A file that needs more (format 1, written before this,
pickled the buffer's ``Episode`` objects; or a planted pickle) is refused with an error. Weights that
are not finite are never written (:func:`save_checkpoint` refuses them). Resuming checks that the saved
``config.json`` agrees with the new config on everything that changes the result (it may differ in
``iterations``, ``resume``, ``progress``, ``eval_every``, ``checkpoint_every`` - so a run can be
extended); where ``config.json`` was deleted, the config the checkpoint records (``state["config"]``)
is compared instead, and a checkpoint that records none is refused. Since issue 32 a resume also
checks, before it writes anything (:func:`check_resume`, :func:`check_loadable`): the config the
checkpoint records and its run id (``<run>/run_id``; runs started before ids resume on their config)
against the run's, its keys and iteration (an integer in ``1..iterations``), the metrics (no row
missing before the checkpoint, none further than one checkpoint interval after it; without a
checkpoint, none past the first one), and every tensor's name, shape, dtype and finiteness against
the model and optimizer - each refusal one line naming the file. It then reloads the state and drops
metric rows written after the checkpoint. :func:`check_run_dir` makes the checks that need no model
without writing anything, for ``rspo train`` to call before it loads a model.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import stat
import uuid
import zipfile
from pathlib import Path

import torch

from rspo.core.atomic import LOCK_NAME, atomic_path, atomic_write_text, remove_partial_files
from rspo.core.config import TrainConfig

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


def _shape(t) -> str:
    return "(" + ", ".join(str(d) for d in t.shape) + ")"


def check_trainable_state(policy, state, where: str = "checkpoint", what: str = "policy") -> None:
    """A one-line ValueError (``where``: the file) unless ``state`` holds exactly ``policy``'s trainable
    tensors by name, each of its parameter's shape and dtype and finite; the first difference named.
    Nothing is changed (before, a broadcastable shape loaded silently, a wrong one gave a traceback)."""
    if not isinstance(state, dict):
        raise ValueError(f"{where}: the {what} weights are a {type(state).__name__}, not a dict of tensors")
    params = dict(policy.named_trainable_parameters())
    for name in params:
        if name not in state:
            raise ValueError(
                f"{where}: the {what} weights lack the model's tensor {name} (another model's checkpoint?)"
            )
    for name in state:
        if name not in params:
            raise ValueError(
                f"{where}: the {what} weights hold a tensor {name!r} the model does not have "
                "(another model's checkpoint?)"
            )
    for name, p in params.items():
        t = state[name]
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{where}: {what} tensor {name} is a {type(t).__name__}, not a tensor")
        if t.shape != p.shape:
            raise ValueError(
                f"{where}: {what} tensor {name} has shape {_shape(t)} in the file, {_shape(p)} in the "
                "model (another model's checkpoint?)"
            )
        if t.dtype != p.dtype:
            raise ValueError(
                f"{where}: {what} tensor {name} is {t.dtype} in the file, {p.dtype} in the model"
            )
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise ValueError(f"{where}: {what} tensor {name} is not finite (nan/inf): a damaged checkpoint")


def load_trainable_state(policy, state: dict[str, torch.Tensor], where: str = "checkpoint") -> None:
    """Copy ``state`` into ``policy``'s trainable tensors, after :func:`check_trainable_state`."""
    check_trainable_state(policy, state, where)
    params = dict(policy.named_trainable_parameters())
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(state[name].to(p.device, p.dtype))


def check_optimizer_state(optimizer, state, where: str = "checkpoint", what: str = "optimizer") -> None:
    """A one-line ValueError unless ``state`` is an AdamW ``state_dict`` of ``optimizer``'s parameters:
    as many parameters, per-parameter tensors of their shapes, finite numbers."""
    if not isinstance(state, dict) or not isinstance(state.get("param_groups"), list):
        raise ValueError(f"{where}: the {what} state is not an optimizer state_dict (no param_groups)")
    if not isinstance(state.get("state"), dict):
        raise ValueError(f"{where}: the {what} state is not an optimizer state_dict (no state)")
    params = [p for g in optimizer.param_groups for p in g["params"]]
    ids = []
    for group in state["param_groups"]:
        if not isinstance(group, dict) or not isinstance(group.get("params"), list):
            raise ValueError(f"{where}: the {what} state has a damaged parameter group")
        ids += group["params"]
    if len(ids) != len(params) or len(state["param_groups"]) != len(optimizer.param_groups):
        raise ValueError(
            f"{where}: the {what} state is for {len(ids)} parameters in {len(state['param_groups'])} "
            f"groups, the model has {len(params)} in {len(optimizer.param_groups)} (another model's checkpoint?)"
        )
    index = {i: p for i, p in zip(ids, params, strict=True) if type(i) is int}
    for i, slots in state["state"].items():
        if i not in index or not isinstance(slots, dict):
            raise ValueError(f"{where}: the {what} state names a parameter {i!r} the model does not have")
        for slot, t in slots.items():
            if not isinstance(t, torch.Tensor):
                continue
            if slot != "step" and t.shape != index[i].shape:
                raise ValueError(
                    f"{where}: {what} state {slot} of parameter {i} has shape {_shape(t)}, the parameter "
                    f"{_shape(index[i])} (another model's checkpoint?)"
                )
            if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                raise ValueError(f"{where}: {what} state {slot} of parameter {i} is not finite (nan/inf)")


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
    run_id = getattr(trainer, "run_id", None)
    if isinstance(run_id, str):  # the run's identity (RUN_ID_NAME): another run's checkpoint is told apart
        state["run_id"] = run_id
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


def regular_file(path: Path, what: str) -> None:
    """A one-line ValueError unless ``path`` is a regular file: a folder, a device or a pipe (an
    endless stream: ``state.pt`` linked to ``/dev/zero`` was read for 21.7 GB) is refused unread."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except OSError as e:
        raise ValueError(f"cannot read {what} {path}: {e.strerror or e}") from None
    if stat.S_ISDIR(mode):
        raise ValueError(f"{path} is a folder, not a file ({what}); put the run's file back or remove it")
    if not stat.S_ISREG(mode):
        raise ValueError(f"{path} is not a regular file (a device or a pipe, read without end): not a {what}")


def read_checkpoint(path: str | Path, mmap: bool = False) -> dict:
    """The checkpoint at ``path``, loaded with ``weights_only=True``; a one-line ValueError for a
    file that is not a safe checkpoint of this format (old, planted, damaged, or no checkpoint at all:
    text, random bytes, a folder, a device). ``mmap``: map the file instead of reading it (a check
    that only looks)."""
    path = Path(path)
    regular_file(path, "checkpoint")
    try:
        mmap = mmap and zipfile.is_zipfile(path)  # torch maps only its zip format
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as e:
        found = re.search(r"GLOBAL (\S+)", str(e))
        names = _foreign_globals(path) or ([found.group(1)] if found else [])
        if not names:  # no object named: not a pickle that runs code, just not a checkpoint
            raise ValueError(
                f"{path}: cannot read the checkpoint (damaged, or not a file torch.save wrote): "
                "UnpicklingError, no tensors or plain data in it"
            ) from None
        raise ValueError(
            f"{path}: refusing to load this checkpoint: it holds the Python object {names[0]}, which "
            f"could run code when loaded; format {FORMAT} checkpoints hold only tensors and plain data. "
            "If it is an old (format 1) checkpoint of your own, it is unsafe to load: start the run "
            "again without --resume, or in another folder"
        ) from None
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as e:  # torch's reader on text, random bytes or a cut file: KeyError, RuntimeError ...
        text = str(e).strip()
        first = text.splitlines()[0][:120] if text else type(e).__name__
        raise ValueError(
            f"{path}: cannot read the checkpoint (damaged, or not a file torch.save wrote): "
            f"{type(e).__name__}: {first}"
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


REQUIRED = ("iteration", "env_steps", "policy", "optimizer")  # what every checkpoint holds


def check_state(state: dict, path: Path, cfg: TrainConfig | None = None) -> None:
    """The plain part of a checkpoint checked, before anything is loaded or written: every key there,
    ``iteration`` an integer in ``1..cfg.iterations``, ``env_steps`` a count, the weights a dict;
    a one-line ValueError naming the file and what is wrong."""
    redo = "start the run again without --resume (in another folder, or after deleting this one)"
    missing = [k for k in REQUIRED if k not in state]
    if missing:
        raise ValueError(f"{path}: the checkpoint lacks {', '.join(missing)}: damaged or not rspo's; {redo}")
    it = state["iteration"]
    if type(it) is not int or it < 1:
        raise ValueError(
            f"{path}: the checkpoint's iteration {it!r} is not a whole number >= 1: damaged or crafted; {redo}"
        )
    if cfg is not None and it > cfg.iterations:
        raise ValueError(
            f"{path}: the checkpoint is at iteration {it}, past iterations={cfg.iterations}: resuming "
            f"would rewrite the run's history; pass --iterations {it} or more to continue it"
        )
    if type(state["env_steps"]) is not int or state["env_steps"] < 0:
        raise ValueError(f"{path}: the checkpoint's env_steps {state['env_steps']!r} is not a count; {redo}")
    for key in ("policy", "optimizer"):
        if not isinstance(state[key], dict):
            raise ValueError(
                f"{path}: the checkpoint's {key} is a {type(state[key]).__name__}, not a dict; {redo}"
            )
    if not isinstance(state.get("extra", {}), dict):
        raise ValueError(f"{path}: the checkpoint's extra is not a dict; {redo}")


RUN_ID_NAME = "run_id"  # <run>/run_id: the run's random id, recorded in each of its checkpoints


def read_run_id(run_dir: Path) -> str | None:
    """The run id in ``<run>/run_id`` (None: a run started before runs had ids)."""
    path = run_dir / RUN_ID_NAME
    if not path.exists() and not path.is_symlink():
        return None
    regular_file(path, "run id file")
    with open(path, "rb") as f:
        raw = f.read(65)
    text = raw.decode("ascii", "replace").strip()
    if not re.fullmatch(r"[0-9a-f]{32}", text):
        raise ValueError(f"{path} does not hold a run id (32 hex digits): damaged; put the run's file back")
    return text


def _load_saved_config(path: Path, run_dir: Path) -> TrainConfig:
    """``<run>/config.json`` as a TrainConfig; a one-line ValueError naming it when it is a folder, a
    device, too big, not UTF-8, damaged JSON, nested too deeply or not a config."""
    fix = "put the run's config.json back, or delete it to compare with the config its checkpoint records"
    regular_file(path, "config file")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ValueError(
            f"cannot resume {run_dir}: {path} is over {MAX_CONFIG_BYTES} bytes: not a run's config"
        )
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"cannot resume {run_dir}: {path} is not UTF-8 text; {fix}") from None
    except json.JSONDecodeError as e:
        raise ValueError(
            f"cannot resume {run_dir}: {path} is damaged ({e.msg} at line {e.lineno}); {fix}"
        ) from None
    except RecursionError:
        raise ValueError(f"cannot resume {run_dir}: {path} is JSON nested too deeply; {fix}") from None
    if not isinstance(data, dict):
        raise ValueError(f"cannot resume {run_dir}: {path} is not a JSON object; {fix}")
    try:
        return TrainConfig.from_dict(data)
    except (ValueError, TypeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"cannot resume {run_dir}: {path} is not a valid config ({first}); {fix}") from None


MAX_CONFIG_BYTES = 1 << 20  # a run's config.json is a few kB


def _metrics_iterations(path: Path) -> list[int] | None:
    """The iterations of the rows in ``metrics.jsonl`` (None: no file); a damaged line is skipped, as
    :meth:`rspo.core.metrics.MetricsLog.read` skips it; a folder, a device or non-UTF-8 text is an error."""
    rows = _metrics_lines(path)
    return None if rows is None else [it for it in rows if it is not None]


def _metrics_lines(path: Path) -> list[int | None] | None:
    """Per non-empty line of ``metrics.jsonl``, its row's iteration, or None for a damaged line (one a
    kill cut: not JSON, or no integer iteration); None when there is no file."""
    if not path.exists() and not path.is_symlink():
        return None
    regular_file(path, "metrics file")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{path} is not UTF-8 text (byte {e.start}): damaged; put the run's file back"
        ) from None
    out: list[int | None] = []
    for line in filter(str.strip, text.splitlines()):
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            row = None
        out.append(row["iteration"] if isinstance(row, dict) and type(row.get("iteration")) is int else None)
    return out


def check_loadable(trainer, state: dict, path: Path) -> None:
    """Every tensor of ``state`` checked against ``trainer``'s model before anything is loaded (names,
    shapes, dtypes, finite numbers: :func:`check_trainable_state`, :func:`check_optimizer_state`;
    RSPO: the explorer, its optimizer and the replay buffer too); a one-line ValueError naming
    ``path`` and the first difference."""
    check_trainable_state(trainer.policy, state["policy"], str(path), "policy")
    check_optimizer_state(trainer.optimizer, state["optimizer"], str(path), "optimizer")
    extra = state.get("extra", {})
    for key in ("successes", "explorer_successes"):
        found = extra.get(key, [])
        if not isinstance(found, list) or not all(isinstance(x, str) for x in found):
            raise ValueError(f"{path}: the checkpoint's extra[{key!r}] is not a list of strings: damaged")
    if getattr(trainer, "explorer", None) is None:
        return
    for key in ("explorer", "explorer_optimizer", "buffer"):
        if key not in extra:
            raise ValueError(f"{path}: the checkpoint has no {key} state: it was not saved by an RSPO run")
    check_trainable_state(trainer.explorer.policy, extra["explorer"], str(path), "explorer")
    check_optimizer_state(
        trainer.explorer.optimizer, extra["explorer_optimizer"], str(path), "explorer optimizer"
    )
    from rspo.core.swap import ReplayBuffer

    try:
        ReplayBuffer.from_state(extra["buffer"], trainer.cfg.buffer_groups, trainer.cfg.buffer_max_age)
    except (MemoryError, KeyboardInterrupt):
        raise
    except Exception as e:
        raise ValueError(
            f"{path}: the checkpoint's replay buffer is damaged ({type(e).__name__}: {e})"
        ) from None


def load_state(trainer, state: dict, path: Path) -> None:
    """Load a checked ``state`` (:func:`check_state`, :func:`check_loadable`) into ``trainer``."""
    load_trainable_state(trainer.policy, state["policy"], str(path))
    trainer.optimizer.load_state_dict(state["optimizer"])
    trainer.iteration = state["iteration"]
    trainer.env_steps = state["env_steps"]
    by_rank = state.get("extra", {}).get("env_steps_by_rank")
    dist = getattr(trainer, "dist", None)
    if dist is not None and by_rank and len(by_rank) == dist.world:
        trainer.env_steps = by_rank[dist.rank]  # each process counts its own steps
    if hasattr(trainer, "load_checkpoint_extra"):
        trainer.load_checkpoint_extra(state.get("extra", {}))


def load_checkpoint(trainer) -> bool:
    """Load the run's checkpoint into ``trainer``, every part checked first; False when there is none."""
    path = _state_path(trainer.run_dir)
    if not path.exists():
        return False
    state = read_checkpoint(path)
    check_state(state, path, getattr(trainer, "cfg", None))
    check_loadable(trainer, state, path)
    load_state(trainer, state, path)
    return True


def check_same_run(old: TrainConfig, new: TrainConfig, run_dir: Path, source: str = "") -> None:
    """Raise if ``new`` differs from the saved ``old`` in anything that changes the result
    (``source``: where ``old`` was read, when not the run's config.json)."""
    old_d, new_d = old.to_dict(), new.to_dict()
    diff = sorted(k for k in new_d if k not in MAY_DIFFER and old_d.get(k) != new_d[k])
    if diff:
        shown = ", ".join(f"{k}: {old_d.get(k)!r} -> {new_d[k]!r}" for k in diff)
        raise ValueError(f"cannot resume {run_dir}: config differs in {shown}{source}")


def check_resume(cfg: TrainConfig, run_dir: Path, mmap: bool = True) -> dict | None:
    """Raise unless resuming ``run_dir`` with ``cfg`` continues the same run, checked without writing
    anything; return its checkpoint's state (None: no checkpoint, the run starts from the beginning).

    ``cfg`` is compared with the run's ``config.json`` and with the config its checkpoint records
    (where ``config.json`` was deleted, with that one only; a checkpoint that records none then is
    refused, since a changed seed or lr could not be told); the checkpoint's run id with the folder's
    (``run_id``); the checkpoint's keys and iteration (:func:`check_state`); and the metrics: rows up to
    the checkpoint's iteration all there, none further than one checkpoint interval past it (else the
    checkpoint is another's, or older than the metrics). Without a checkpoint only rows up to the first
    checkpoint may be there (a run killed before it), which the restart drops and writes again."""
    saved, path = run_dir / "config.json", _state_path(run_dir)
    redo = "put the run's checkpoint back, or start the run again without --resume in another folder"
    for folder in (run_dir, run_dir / "checkpoint"):
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"{folder} is a file, not a folder; remove it or choose another --name")
    old = _load_saved_config(saved, run_dir) if saved.exists() or saved.is_symlink() else None
    if old is not None:
        check_same_run(old, cfg, run_dir)
    rows = _metrics_iterations(run_dir / "metrics.jsonl")
    folder_id = read_run_id(run_dir)
    if not path.exists() and not path.is_symlink():
        last = max(rows or [0])
        ran = old or cfg
        first = min(ran.checkpoint_every or ran.iterations, ran.iterations)
        if last > first:
            raise ValueError(
                f"cannot resume {run_dir}: its checkpoint {path} is missing but metrics.jsonl records "
                f"iterations up to {last}: resuming would start again and drop them; {redo}"
            )
        return None
    state = read_checkpoint(path, mmap=mmap)
    check_state(state, path, cfg)
    recorded = state.get("config")
    if recorded is not None:
        if not isinstance(recorded, dict):
            raise ValueError(f"{path}: the checkpoint's recorded config is not a dict: damaged; {redo}")
        try:
            theirs = TrainConfig.from_dict(recorded)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{path}: the checkpoint's recorded config is not valid ({e}); {redo}") from None
        source = (
            " (from the checkpoint: config.json is missing)"
            if old is None
            else f" (the config {path} records: another run's checkpoint?)"
        )
        check_same_run(theirs, cfg, run_dir, source)
    elif old is None:
        raise ValueError(
            f"cannot resume {run_dir}: its config.json is missing and its checkpoint does not record "
            "the config, so a changed seed or lr could not be detected; put the run's config.json back, "
            "or start the run again without --resume (in another folder, or after deleting this one)"
        )
    state_id = state.get("run_id")
    if state_id != folder_id:
        if folder_id is None:
            raise ValueError(
                f"cannot resume {run_dir}: {path} belongs to run {state_id} but the folder has no "
                f"{RUN_ID_NAME} file: if it is this run's own checkpoint, put back {run_dir / RUN_ID_NAME} "
                f"(holding {state_id}); else {redo}"
            )
        raise ValueError(
            f"cannot resume {run_dir}: {path} is another run's checkpoint (run id {state_id}, this run "
            f"{folder_id}); {redo}"
        )
    it = state["iteration"]
    if rows is None:
        raise ValueError(
            f"cannot resume {run_dir}: its metrics.jsonl is missing but the checkpoint is at iteration "
            f"{it}: resuming would lose iterations 1-{it}'s rows; put the run's metrics.jsonl back, or "
            "start the run again without --resume in another folder"
        )
    if max(rows or [0]) < it:
        raise ValueError(
            f"cannot resume {run_dir}: its metrics.jsonl ends at iteration {max(rows or [0])} but the "
            f"checkpoint {path} is at {it}: rows are missing; put the run's metrics.jsonl back, or "
            "start the run again without --resume in another folder"
        )
    ran = old or cfg
    reach = min(it + ran.checkpoint_every, ran.iterations) if ran.checkpoint_every else ran.iterations
    if max(rows) > max(reach, it):
        raise ValueError(
            f"cannot resume {run_dir}: its metrics.jsonl records iterations up to {max(rows)} but the "
            f"checkpoint {path} is at {it}, more than one checkpoint interval before: resuming would "
            f"drop iterations {it + 1}-{max(rows)}; {redo}"
        )
    return state


def _holds_a_run(run_dir: Path) -> bool:
    return run_dir.is_dir() and any(p.name != LOCK_NAME for p in run_dir.iterdir())


def check_run_name(cfg: TrainConfig) -> None:
    """A one-line ValueError for a run name no folder can have, before anything is created: a control
    character (a newline splits every log line that names the run) or longer than the filesystem's
    limit on a name (a traceback from ``mkdir`` before)."""
    name = cfg.name
    bad = [c for c in name if ord(c) < 32 or ord(c) == 127]
    if bad:
        raise ValueError(f"--name {name!r} holds a control character ({bad[0]!r}); choose a plain name")
    limit = 255
    try:
        existing = Path(cfg.out_dir)
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        limit = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        pass
    if len(os.fsencode(name)) > limit:
        raise ValueError(
            f"--name is {len(os.fsencode(name))} bytes, longer than this filesystem allows for a folder "
            f"name ({limit}); choose a shorter name"
        )


def check_run_dir(cfg: TrainConfig, must_exist: bool = False) -> None:
    """What :func:`prepare_run_dir` will refuse, checked without writing anything - ``rspo train``
    calls it before loading any model, so a bad run folder is a one-line error at once: a bad name,
    ``out_dir`` or the run folder a file, a folder that cannot be written, a run there already
    (without ``resume``), a resume of another run, with another config, a crafted checkpoint or
    missing history (:func:`check_resume`). With ``must_exist`` (``rspo train --resume``) a missing
    run folder is an error too; the library's ``resume=True`` starts a missing run (benchmarks and
    :func:`rspo.study.experiments.ensure_run` rely on that)."""
    check_run_name(cfg)
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
    the run's lock (:class:`rspo.core.atomic.RunLock`): resuming rewrites the metrics. Every check (the
    config, the run id, the checkpoint's keys, iteration and tensors against the model, the metrics)
    comes before the first write: a refused resume leaves every file of the folder as it was."""
    cfg: TrainConfig = trainer.cfg
    run_dir: Path = trainer.run_dir
    saved = run_dir / "config.json"
    if cfg.resume:
        state = check_resume(cfg, run_dir, mmap=False)
        if state is not None:
            check_loadable(trainer, state, _state_path(run_dir))
        trainer.run_id = read_run_id(run_dir)
        for folder in (run_dir, run_dir / "checkpoint"):  # temporary files of writes a kill cut
            remove_partial_files(folder)
        if state is not None:
            load_state(trainer, state, _state_path(run_dir))
            lines = _metrics_lines(trainer.log.path) or []
            # rows past the checkpoint go, and so does a line a kill cut (it would stay in the file
            # for good when it was the row after the checkpoint, which no other row follows)
            if None in lines or max((it for it in lines if it is not None), default=0) > trainer.iteration:
                trainer.log.truncate(trainer.iteration)
        else:  # killed before its first checkpoint (check_resume: no row past it): start again
            trainer.log.path.unlink(missing_ok=True)
    elif _holds_a_run(run_dir):
        raise _holds_a_run_error(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    if not cfg.resume or (trainer.run_id is None and not _state_path(run_dir).exists()):
        trainer.run_id = uuid.uuid4().hex  # a new run (or one restarted from nothing): a new identity
        atomic_write_text(run_dir / RUN_ID_NAME, trainer.run_id + "\n")
    with atomic_path(saved) as tmp:
        cfg.save(tmp)


def remove_run(run_dir: str | Path) -> None:
    """Delete a run directory (used by benchmarks that restart a run from scratch)."""
    shutil.rmtree(run_dir, ignore_errors=True)
