"""Kill test: a run SIGKILLed at random moments and resumed ends exactly where an uninterrupted one ends.

    python benchmarks/kill_test.py [--kills 20] [--iterations 6] [--checkpoint-every 2]
        [--reward rspo] [--seed 0] [--out DIR]

1. A reference run trains a tiny untrained policy (``rspo.core.policies.tiny``, no warm start) to the
   end in a subprocess.
2. The same run is started with ``resume=True`` in another folder, again and again, and each start
   is killed with SIGKILL until ``--kills`` kills are spent; then it runs to the end. The child
   announces on stdout each iteration it starts and each write, and slows every write down (a pause
   halfway through a checkpoint's temporary file, between a metrics row's two halves, and before
   each rename of a temporary file; see :func:`_slow_writes`). A start is killed at its n-th
   announcement, n drawn uniformly from those the rest of the run makes: at a write, in the middle
   of it; at an iteration's start, after a random delay (anywhere in rollout, update, evaluation).
3. PASS if every metrics row of the reference run (``time/*`` aside) is in the killed run's
   ``metrics.jsonl`` exactly once and nothing else is, no line is damaged, no temporary file is
   left, and the final checkpoints hold equal weights and optimizer state (and, for RSPO, explorer
   and replay buffer). Exit code 1 on FAIL.

The slow writes exist only in the child this script starts: the kit's own code has no test hooks.
A kill lands on whatever the trainer is doing, so the windows are widened, not simulated: a torn
metrics line is written as two real ``os.write`` calls (a single call is not torn by SIGKILL).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MARK = "@@kill-test"  # stdout lines the child prints to the parent


def _say(*parts) -> None:
    print(MARK, *parts, flush=True)


def _slow_writes(pause: float) -> None:
    """In the child: widen the kill windows of every write the trainer makes (see the docstring)."""
    import types

    import torch

    import rspo.core.atomic
    import rspo.core.metrics

    real_save, real_replace, real_write = torch.save, os.replace, os.write

    def slow_save(obj, f, *args, **kwargs):
        if not isinstance(f, str | os.PathLike):
            return real_save(obj, f, *args, **kwargs)
        buf = io.BytesIO()
        real_save(obj, buf, *args, **kwargs)
        data = buf.getvalue()
        with open(f, "wb") as out:
            out.write(data[: len(data) // 2])
            out.flush()
            _say("write", "checkpoint-half", Path(f).name)
            time.sleep(pause)
            out.write(data[len(data) // 2 :])

    def slow_replace(src, dst):
        _say("write", "rename", Path(dst).name)
        time.sleep(pause)
        return real_replace(src, dst)

    torn = [False]

    def torn_write(fd, data):
        if torn[0] or len(data) < 2:  # the rest of a row: whole
            torn[0] = False
            return real_write(fd, data)
        torn[0] = True
        n = real_write(fd, data[: len(data) // 2])  # the caller (MetricsLog.write) loops for the rest
        _say("write", "metrics-half-row")
        time.sleep(pause)
        return n

    torch.save = slow_save
    rspo.core.atomic.os = types.SimpleNamespace(**{**vars(os), "replace": slow_replace})
    rspo.core.metrics.os = types.SimpleNamespace(**{**vars(os), "write": torn_write})


def child(args) -> None:
    import torch

    from rspo.core.config import TrainConfig
    from rspo.core.policies.tiny import untrained_tiny_policy
    from rspo.core.trainer import Trainer

    torch.set_num_threads(1)
    cfg = TrainConfig(**json.loads(args.child_config))
    if args.slow:
        _slow_writes(args.pause)
    train_step = Trainer.train_step

    def announced_step(self, it):
        _say("step", it + 1)
        return train_step(self, it)

    Trainer.train_step = announced_step
    trainer = Trainer(cfg, policy=untrained_tiny_policy(cfg.seed, value_head=cfg.algo == "ppo"))
    _say("ready")
    trainer.run()
    _say("done")


def run_config(args, out_dir: Path, name: str) -> dict:
    return dict(
        env="household",
        algo=args.algo,
        reward=args.reward,
        seed=args.seed,
        iterations=args.iterations,
        tasks_per_iter=2,
        group_size=2,
        max_steps=4,
        temperature=20.0,  # an untrained model: varied actions, so groups differ
        eval_every=args.eval_every,
        eval_tasks=2,
        checkpoint_every=args.checkpoint_every,
        out_dir=str(out_dir),
        name=name,
        progress=False,
        lr=1e-3,
        micro_batch=8,
        threads=1,
        resume=True,
    )


def _start(cfg: dict, slow: bool, pause: float) -> tuple[subprocess.Popen, queue.Queue]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child-config", json.dumps(cfg)]
    if slow:
        cmd += ["--slow", "--pause", str(pause)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    log = Path(cfg["out_dir"]) / f"{cfg['name']}.stderr.log"  # a file: a full pipe would block the child
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
    proc.log = log
    lines: queue.Queue = queue.Queue()

    def pump():
        for line in proc.stdout:
            if line.startswith(MARK):
                lines.put(line[len(MARK) :].split())
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return proc, lines


def _stderr_tail(proc: subprocess.Popen) -> str:
    return "\n".join(proc.log.read_text().strip().splitlines()[-8:])


def reference(cfg: dict) -> float:
    """Run the reference to the end; returns its training seconds per iteration (after start-up)."""
    Path(cfg["out_dir"]).mkdir(parents=True, exist_ok=True)
    proc, lines = _start(cfg, slow=False, pause=0.0)
    ready = end = None
    while (msg := lines.get()) is not None:
        if msg[0] == "ready":
            ready = time.monotonic()
        elif msg[0] == "done":
            end = time.monotonic()
    if proc.wait() != 0 or ready is None or end is None:
        raise SystemExit(f"FAIL: the reference run failed:\n{_stderr_tail(proc)}")
    return (end - ready) / cfg["iterations"]


def _checkpointed(run_dir: Path) -> int:
    """The iteration of the run's checkpoint (0: none)."""
    from rspo.core.checkpoint import read_checkpoint

    path = run_dir / "checkpoint" / "state.pt"
    return read_checkpoint(path)["iteration"] if path.exists() else 0


def _marks_left(cfg: dict, checkpointed: int) -> int:
    """The marks a start resuming at ``checkpointed`` prints if nobody kills it: on resume the
    metrics' truncation (or the first evaluation's row), config.json, then per iteration a step, its
    metrics row and, where it checkpoints, the checkpoint's two pauses."""
    n = 1 + (1 if checkpointed or cfg["eval_every"] else 0)
    for it in range(checkpointed + 1, cfg["iterations"] + 1):
        n += 2 + (2 if it % cfg["checkpoint_every"] == 0 or it == cfg["iterations"] else 0)
    return n


def killed_run(cfg: dict, kills: int, rng: random.Random, pause: float, seconds_per_iteration: float) -> dict:
    """Start, kill and resume until the run finishes; returns counts of what was done.

    While kills remain, a start is killed at its n-th mark, n drawn uniformly from the marks the
    rest of the run prints: at a write mark at once (in the middle of the write), at a step mark
    after a random delay within an iteration (anywhere in rollout, update or evaluation)."""
    done = {"kills": 0, "kills_in_writes": {}, "kills_at_random_times": 0, "starts": 0, "stale_locks": 0}
    run_dir = Path(cfg["out_dir"]) / cfg["name"]
    while True:
        if (run_dir / ".lock").exists():
            done["stale_locks"] += 1  # a killed child's lock file: the next start must take it over
        killing = done["kills"] < kills
        countdown = rng.randint(1, _marks_left(cfg, _checkpointed(run_dir)))
        proc, lines = _start(cfg, slow=True, pause=pause)
        done["starts"] += 1
        deadline = killed = None
        while killed is None:
            timeout = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                msg = lines.get(timeout=timeout)
            except queue.Empty:  # the random moment came
                killed = "random"
                break
            if msg is None:  # the child exited
                break
            if not killing or msg[0] not in ("write", "step") or deadline is not None:
                continue
            countdown -= 1
            if countdown == 0 and msg[0] == "write":
                killed = " ".join(msg[1:3]) if msg[1] == "rename" else msg[1]
            elif countdown == 0:
                deadline = time.monotonic() + rng.uniform(0.0, seconds_per_iteration)
        if killed is not None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            done["kills"] += 1
            if killed == "random":
                done["kills_at_random_times"] += 1
            else:
                done["kills_in_writes"][killed] = done["kills_in_writes"].get(killed, 0) + 1
            continue
        rc = proc.wait()
        if rc != 0:
            raise SystemExit(f"FAIL: a resumed start exited with {rc} (not killed):\n{_stderr_tail(proc)}")
        return done


def _weights(path: Path) -> dict:
    from rspo.core.checkpoint import read_checkpoint

    return read_checkpoint(path)


def _equal(a, b) -> bool:
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def compare(ref_dir: Path, run_dir: Path) -> list[str]:
    """What differs between the reference run and the killed one (empty: PASS)."""
    problems = []

    def rows(d: Path) -> tuple[list[str], int]:
        lines = [ln for ln in (d / "metrics.jsonl").read_text().splitlines() if ln.strip()]
        out = []
        for ln in lines:
            try:
                row = json.loads(ln)
            except json.JSONDecodeError:
                problems.append(f"{d.name}: damaged metrics line {ln[:60]!r}")
                continue
            out.append(
                json.dumps({k: v for k, v in row.items() if not k.startswith("time/")}, sort_keys=True)
            )
        return out, len(lines)

    ref_rows, _ = rows(ref_dir)
    got_rows, _ = rows(run_dir)
    if not any(json.loads(r).get("loss/grad_norm", 0) > 0 for r in ref_rows):
        problems.append("the reference run has no gradient: equal weights would prove nothing")
    for r in ref_rows:
        n = got_rows.count(r)
        if n != 1:
            problems.append(f"reference row iteration {json.loads(r)['iteration']} found {n} times")
    extra = [r for r in got_rows if r not in ref_rows]
    if extra:
        problems.append(f"{len(extra)} rows not in the reference run, e.g. {extra[0][:100]}")
    ref, got = _weights(ref_dir / "checkpoint" / "state.pt"), _weights(run_dir / "checkpoint" / "state.pt")
    for key in ("iteration", "env_steps", "policy", "optimizer", "extra"):
        if not _equal(ref[key], got[key]):
            problems.append(f"final checkpoint differs in {key}")
    left = sorted(p.name for d in (run_dir, run_dir / "checkpoint") for p in d.glob(".*.partial"))
    if left:
        problems.append(f"temporary files left: {left}")
    if (run_dir / ".lock").exists():
        problems.append("the lock file is left after the run finished")
    return problems


def kill_test(
    out: Path,
    kills: int = 20,
    iterations: int = 6,
    checkpoint_every: int = 2,
    algo: str = "grpo",
    reward: str = "rspo",
    eval_every: int = 3,
    seed: int = 0,
    pause: float = 0.15,
) -> tuple[bool, dict, list[str]]:
    """Run the test in ``out``; returns (passed, what was done, problems)."""
    args = argparse.Namespace(
        algo=algo,
        reward=reward,
        seed=seed,
        iterations=iterations,
        eval_every=eval_every,
        checkpoint_every=checkpoint_every,
    )
    t0 = time.perf_counter()
    per_iteration = reference(run_config(args, out, "reference"))
    t_ref = time.perf_counter() - t0
    done = killed_run(run_config(args, out, "killed"), kills, random.Random(seed), pause, per_iteration)
    done["seconds_reference"] = round(t_ref, 1)
    done["seconds_total"] = round(time.perf_counter() - t0, 1)
    problems = compare(out / "reference", out / "killed")
    done["rows"] = len([ln for ln in (out / "reference" / "metrics.jsonl").read_text().splitlines() if ln])
    return not problems, done, problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--checkpoint-every", type=int, default=2)
    parser.add_argument("--algo", default="grpo")
    parser.add_argument("--reward", default="rspo", help="rspo (explorer + replay buffer) or outcome/dense")
    parser.add_argument("--eval-every", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pause", type=float, default=0.15, help="seconds each slowed write pauses")
    parser.add_argument("--out", default=None, help="folder for the two runs (default: a temporary one)")
    parser.add_argument("--child-config", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--slow", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_config:
        return child(args)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="kill-test-"))
    for name in ("reference", "killed"):
        shutil.rmtree(out / name, ignore_errors=True)
    print(
        f"kill test: {args.algo} + {args.reward}, {args.iterations} iterations, checkpoint every "
        f"{args.checkpoint_every}, {args.kills} SIGKILLs, in {out}",
        flush=True,
    )
    passed, done, problems = kill_test(
        out,
        args.kills,
        args.iterations,
        args.checkpoint_every,
        args.algo,
        args.reward,
        args.eval_every,
        args.seed,
        args.pause,
    )
    print(
        f"reference run: {done['rows']} metrics rows in {done['seconds_reference']} s; killed run: "
        f"{done['starts']} starts, {done['kills']} SIGKILLs ({done['kills_at_random_times']} at random "
        f"times, in writes: {done['kills_in_writes']}), {done['stale_locks']} stale locks taken over; "
        f"{done['seconds_total']} s in all"
    )
    for p in problems:
        print("  -", p)
    print("PASS" if passed else "FAIL")
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
