"""``rspo replay RUN --iterations K``: re-run an archived run's first K iterations and compare its rows.

A published result should be one a sceptic can re-run, not only rebuild from its logs. This trains
the run's config again for K iterations in a scratch folder and compares every value of every
metrics row from iteration 0 to K with the archived one - exactly by default: the same code, packages
and machine type give the same floats (every random draw of a run is derived from its seed), and the
rows went through the same JSON both times. Timings (``time/*``) are not compared; an evaluation the
shorter replay adds at its last iteration has nothing to be compared with and is left out.

When a value differs, the first one is named (iteration, key, both values), with the fields of the
run's fingerprint (:mod:`rspo.core.fingerprint`) that differ from the replay's: packages, the kit's
commit, the machine, the warm start's weights. ``--tolerance`` (relative) loosens the comparison for
a replay on another machine type, where float rounding may differ; say why when you use it.
"""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import replace
from pathlib import Path

SKIPPED = ("time/",)


def first_difference(archived: list[dict], replayed: list[dict], upto: int, tolerance: float = 0.0):
    """``(iteration, key, archived value, replayed value)`` of the first value that differs in rows 0..upto
    (a row or a key missing from the replay counts), else None; and the number of values compared."""
    mine = {r.get("iteration"): r for r in replayed}
    compared = 0
    for row in archived:
        it = row.get("iteration")
        if not isinstance(it, int) or it > upto:
            continue
        other = mine.get(it)
        if other is None:
            return (it, "(the whole row)", "present", "missing"), compared
        for key, value in row.items():
            if key.startswith(SKIPPED):
                continue
            if key not in other:
                return (it, key, value, "missing"), compared
            compared += 1
            if not _same(value, other[key], tolerance):
                return (it, key, value, other[key]), compared
    missing = [it for it in range(upto + 1) if it not in {r.get("iteration") for r in archived}]
    if missing:
        return (missing[0], "(the whole row)", "missing", "present"), compared
    return None, compared


def _same(a, b, tolerance: float) -> bool:
    if a == b:
        return True
    if isinstance(a, bool) or isinstance(b, bool) or not all(isinstance(v, (int, float)) for v in (a, b)):
        return False
    if math.isnan(a) and math.isnan(b):
        return True
    return tolerance > 0 and abs(a - b) <= tolerance * max(abs(a), abs(b))


def replay(run_dir, iterations: int, out_dir=None, tolerance: float = 0.0, write=print) -> int:
    """Replay the first ``iterations`` of the archived run in ``run_dir``; 0 when every row matches, 1
    when one differs (the first difference and the fingerprint's changes written), a one-line
    ValueError for a folder that holds no run."""
    from rspo.core import fingerprint
    from rspo.core.config import TrainConfig
    from rspo.core.metrics import MetricsLog
    from rspo.core.registry import SWAP, SWAP_VARIANTS

    run_dir = Path(run_dir)
    if not (run_dir / "config.json").is_file() or not (run_dir / "metrics.jsonl").is_file():
        raise ValueError(f"{run_dir}: not a run folder (it needs config.json and metrics.jsonl)")
    try:
        cfg = TrainConfig.from_dict(json.loads((run_dir / "config.json").read_text()))
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as err:
        raise ValueError(f"{run_dir / 'config.json'}: not a readable run config ({err})") from None
    archived = MetricsLog(run_dir / "metrics.jsonl").read()
    last = max((r.get("iteration", 0) for r in archived), default=0)
    if not isinstance(iterations, int) or not 1 <= iterations <= last:
        raise ValueError(f"--iterations must be an integer in [1, {last}] (the archived run's iterations)")
    before = fingerprint.read(run_dir)
    overrides: dict = {"iterations": iterations, "resume": False, "progress": True}
    if cfg.reward == SWAP and SWAP_VARIANTS.entry(cfg.swap_variant).dense_first:  # the switch where it was
        switch = round(cfg.schedule_frac * cfg.iterations)
        overrides["schedule_frac"] = min(1.0, switch / iterations)
    scratch = Path(out_dir) if out_dir else Path(tempfile.mkdtemp(prefix="rspo-replay-"))
    cfg = replace(cfg, out_dir=str(scratch), **overrides)
    if cfg.run_dir.exists():
        raise ValueError(f"{cfg.run_dir} exists: pass another --out (a replay never overwrites a run)")
    write(f"replaying {run_dir} for {iterations} iteration(s) in {cfg.run_dir} ...")
    from rspo.core.trainer import Trainer

    trainer = Trainer(cfg)
    now = trainer.fingerprint
    changed = fingerprint.differences(fingerprint.base(before), now) if before else None
    if before is None:
        write("  the archived run has no fingerprint.json (made before fingerprints were recorded)")
    elif before.get("start", {}).get("weights") != now.get("start", {}).get("weights"):
        write(
            f"  the starting weights differ: archived {before['start'].get('weights')}, "
            f"here {now['start'].get('weights')} - the rows will differ"
        )
    trainer.run()
    diff, compared = first_difference(
        archived, MetricsLog(cfg.run_dir / "metrics.jsonl").read(), iterations, tolerance
    )
    how = "exactly" if tolerance == 0 else f"within a relative {tolerance:g}"
    if diff is None:
        write(
            f"replay matches: iterations 0-{iterations} of {run_dir.name}, {compared} values equal {how}"
            + (f" (fingerprint differs in: {'; '.join(changed)})" if changed else "")
        )
        return 0
    it, key, a, b = diff
    write(
        f"replay differs: iteration {it}, {key}: archived {a!r}, replayed {b!r} ({compared} values equal {how} before it)"
    )
    if changed is None:
        write("  what changed cannot be named: the archived run has no fingerprint")
    elif changed:
        write("  fingerprint fields that changed: " + "; ".join(changed))
    else:
        write(
            "  the fingerprint is the same (commit, packages, machine, weights): the archived row was changed"
        )
    return 1
