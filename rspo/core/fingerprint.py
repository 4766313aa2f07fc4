"""What a run ran under: the installed packages, the kit's commit, the machine and the starting policy.

Every run writes ``fingerprint.json`` beside its ``config.json`` when it starts (a resume made under
another fingerprint is added to it, under ``"resumed"``). ``rspo replay`` re-runs an archived run's
first iterations and, when a metrics row differs, names the fields of the fingerprint that changed:
the lab's first archive could only be rebuilt from its logs, not re-run, because the packages it ran
under were not recorded (docs/lab/README.md, "Replaying the archive").

Nothing here imports torch at module level; :func:`weights_fingerprint` takes a policy.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
from pathlib import Path

from rspo.core.paths import CHECKOUT as ROOT

FILE = "fingerprint.json"


def weights_fingerprint(policy) -> str:
    """12 hex digits of a SHA-256 over the policy's weights (names and bytes, in name order): which
    starting policy a run or an evaluation belongs to. LoRA adapter weights are left out: they start as
    the identity (B = 0) whatever the seed draws for A, so every seed starts from the same policy."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(policy.model.state_dict().items()):
        if "lora_" in name:
            continue
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().flatten().view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:12]


def packages() -> dict[str, str]:
    """Every installed distribution's version, by normalised name."""
    from importlib.metadata import distributions

    found = {}
    for dist in distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name:
            found[name] = dist.version
    return dict(sorted(found.items()))


def kit_commit() -> dict:
    """The kit's git commit and whether tracked files differ from it (``{}`` outside a git checkout)."""
    if not (ROOT / ".git").exists():
        return {}

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()

    try:
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "-uno"))}
    except (OSError, subprocess.SubprocessError):
        return {}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_fingerprint(cfg, policy=None, warm_start: bool = True) -> dict:
    """The fingerprint of a run of ``cfg`` starting from ``policy``: its weights' hash (the tiny model),
    the warm start's cache folder when the run loaded the default policy (``warm_start``), a named
    model's id."""
    start: dict = {"model": cfg.model or "default", "gguf_file": cfg.gguf_file}
    if not cfg.model and warm_start:
        from rspo.core.sft import default_config, default_policy_path

        config = default_config(cfg.env, cfg.env_options)
        start["warm_start"] = default_policy_path(cfg.env, config).name
    if policy is not None and not cfg.model:  # hashing a 1.5B model's weights would take long
        start["weights"] = weights_fingerprint(policy)
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "kit": kit_commit(),
        "start": start,
        "packages": packages(),
    }


def differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """``"key: old -> new"`` for every field that differs between two fingerprints (nested keys dotted)."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(
                f"{prefix}{key}: {a if a is not None else '(none)'} -> {b if b is not None else '(none)'}"
            )
    return out


def record(run_dir: Path, fingerprint: dict, resumed_at: int | None = None) -> None:
    """Write ``fingerprint.json`` for a fresh run; on a resume (``resumed_at`` its iteration) add the
    new fingerprint under ``"resumed"`` when it differs from the run's."""
    from rspo.core.atomic import atomic_path

    path = Path(run_dir) / FILE
    if resumed_at is None or not path.exists():
        data = fingerprint
    else:
        data = read(run_dir)
        if data is None or not differences(base(data), fingerprint):
            return
        data.setdefault("resumed", []).append({"iteration": resumed_at, **fingerprint})
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def base(data: dict | None) -> dict:
    """A run's fingerprint as it started: without the records of resumes made under another."""
    return {k: v for k, v in (data or {}).items() if k != "resumed"}


def read(run_dir: Path) -> dict | None:
    """A run's fingerprint (None where none was recorded: runs made before fingerprints)."""
    path = Path(run_dir) / FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a readable fingerprint ({err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a readable fingerprint (a JSON object expected)")
    return data
