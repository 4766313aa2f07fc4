"""Seconds per warm-start (SFT) step with 1 and 2 torch threads, alone and beside busy processes.

    python benchmarks/bench_warmstart_threads.py [--env detour] [--steps 20] [--rounds 2] [--beside 0 1]

A warm start is 1,000-1,200 SFT steps of the tiny default policy (``rspo.core.sft.warm_start``). On an idle
2-core machine a step takes a fraction of a second; beside other work it was measured at several
seconds (issue 19). This times ``--steps`` steps per measurement, alternating the thread counts
round by round (so that both see the same machine), with ``--beside`` N extra processes spinning a
core each for the whole measurement (0: only what else runs on the machine). It prints the median
seconds per step of each (threads, beside) pair and the ratio 2 threads / 1 thread.

Nothing is written to the warm-start cache: the policy is built fresh and thrown away.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _spin(stop) -> None:
    """Keep one core busy until ``stop`` is set (a stand-in for other work on the machine)."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def time_steps(env: str, steps: int, threads: int) -> float:
    """Seconds per step of ``steps`` SFT steps of a fresh tiny policy on ``env`` with ``threads``: the
    time of ``steps + 2`` steps less that of 2 steps, so that building the data set is not counted."""
    return (_train_s(env, steps + 2, threads) - _train_s(env, 2, threads)) / steps


def _train_s(env: str, steps: int, threads: int) -> float:
    from rspo.core.sft import default_config, fresh_policy, warm_start

    config = replace(default_config(env), max_steps=steps)
    return warm_start(fresh_policy(config), config, threads=threads)["train_s"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", default="detour")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--beside", type=int, nargs="+", default=[0, 1])
    args = ap.parse_args(argv)

    print(f"{args.env}: {args.steps} SFT steps per measurement, {args.rounds} rounds", flush=True)
    times: dict[tuple[int, int], list[float]] = {}
    ctx = mp.get_context("spawn")
    for rnd in range(args.rounds):
        for beside in args.beside:
            stop = ctx.Event()
            spinners = [ctx.Process(target=_spin, args=(stop,), daemon=True) for _ in range(beside)]
            for p in spinners:
                p.start()
            try:
                for threads in args.threads:
                    s = time_steps(args.env, args.steps, threads)
                    times.setdefault((threads, beside), []).append(s)
                    print(
                        f"round {rnd + 1}: {threads} thread(s), {beside} busy process(es) beside: {s:.2f} s/step",
                        flush=True,
                    )
            finally:
                stop.set()
                for p in spinners:
                    p.join()
    print("\n| threads | busy processes beside | median s/step | runs |")
    print("|---|---|---|---|")
    for (threads, beside), ts in sorted(times.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(f"| {threads} | {beside} | {statistics.median(ts):.3f} | {len(ts)} |")
    for beside in args.beside:
        one, two = times.get((1, beside)), times.get((2, beside))
        if one and two:
            ratio = statistics.median(two) / statistics.median(one)
            print(f"beside {beside}: 2 threads take {ratio:.2f}x the time of 1 thread per step")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
