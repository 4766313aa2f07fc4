"""Why a PPO run on the lab collapses: the winning move's probability, update by update.

    python benchmarks/lab_collapse.py [--algo ppo] [--reward dense] [--seed 1] [--iterations 20]

Trains one lab run (the protocol's settings, ``rspo.study.experiments.run_config("lab", ...)``) in a
scratch folder and, around every update, measures on the update's own batch the turns that won an
episode (the last turn of each successful episode):

- ``p before`` / ``p after``: the mean probability the policy gives that winning action, before and
  after the update;
- ``adv``: the mean advantage those turns were trained with; ``V``: the critic's value of their state
  (PPO) and ``G`` the return that followed it;
- ``approx_kl``: what the update itself logged; ``rollout success``: the success rate of the
  rollout the update trained on.

A collapse shows as ``p after`` near 0 after one update, the next rollout at 0% success and no
recovery: nothing samples the winning move any more. What it prints for the lab's PPO run with the
dense reward, m = 0, seed 1: the critic comes to overvalue the last state (V 11.1 where only the
outcome's 10 follows: it learnt from earlier states, whose returns include process rewards), so the
winning move ("open chest") gets a negative advantage (-1.1) on every success, and the update of
iteration 18 (5 optimiser steps, approx-KL 0.002 on its batch) takes the move's probability from
0.87 to 0.000: the log-probability of its second token (" chest" after "open") goes from -0.01 to
-14.5 (per-token log-probabilities read from the checkpoints before and after that update).

``--reward outcome --seed 4 --iterations 40`` shows the other way a lab PPO run collapsed: the winning
move stays at 0.97-0.99 and V near 10, but the update of iteration 34 logs an approx-KL of 3.38 (the 33
before it at most 0.06) and rollout success falls from 97% to 25% within two iterations.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rspo.core.trainer import Trainer  # noqa: E402
from rspo.core.update import score_turns  # noqa: E402
from rspo.study.experiments import run_config  # noqa: E402


def winning_turns(episodes, batch) -> list[int]:
    """Indices (in ``batch.turns``) of the last turn of every won episode: the move that won."""
    last = {id(ep.turns[-1]) for ep in episodes if ep.won}
    return [i for i, turn in enumerate(batch.turns) if id(turn) in last]


def mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--algo", default="ppo", choices=["ppo", "grpo", "gigpo"])
    ap.add_argument("--reward", default="dense", choices=["outcome", "dense"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--misalignment", type=float, default=0.0)
    args = ap.parse_args(argv)

    out = Path(tempfile.mkdtemp(prefix="rspo-collapse-"))
    cfg = run_config(
        "lab",
        "detour",
        args.algo,
        args.reward,
        args.seed,
        out,
        iterations=args.iterations,
        misalignment=args.misalignment,
        checkpoint_every=args.iterations,
    )
    rows: list[dict] = []
    update, collect = Trainer.update, Trainer.collect_iteration
    seen: list = []

    def collected(self, iteration):
        episodes, batch, extra = collect(self, iteration)
        seen[:] = episodes
        return episodes, batch, extra

    def traced(self, batch, iteration):
        won = winning_turns(seen, batch)

        def p_won() -> float:
            if not won:
                return float("nan")
            logps, _ = score_turns(self.policy, [batch.turns[i] for i in won], self.cfg, self.autocast)
            return mean(math.exp(sum(lp)) for lp in logps)

        before = p_won()
        stats = update(self, batch, iteration)
        rows.append(
            {
                "it": iteration + 1,  # as metrics.jsonl counts: the update that ends iteration it
                "success": mean(float(ep.won) for ep in seen),
                "won": len(won),
                "p_before": before,
                "p_after": p_won(),
                "adv": mean(float(batch.adv[i]) for i in won),
                "V": mean(float(batch.values[i]) for i in won) if batch.values is not None else float("nan"),
                "G": mean(float(batch.returns[i]) for i in won)
                if batch.returns is not None
                else float("nan"),
                "approx_kl": stats["loss/approx_kl"],
            }
        )
        print(_line(rows[-1]), flush=True)
        return stats

    Trainer.update, Trainer.collect_iteration = traced, collected
    print(
        f"lab run {cfg.name} (m = {args.misalignment}), {args.iterations} iterations, in {out} "
        "(about 5 CPU s per iteration)",
        flush=True,
    )
    print(_header(), flush=True)
    try:
        Trainer(cfg).run()
    finally:
        Trainer.update, Trainer.collect_iteration = update, collect
        shutil.rmtree(out, ignore_errors=True)
    collapsed = [r["it"] for r in rows if r["p_before"] > 0.5 and r["p_after"] < 0.01]
    if collapsed:
        print(f"collapse: update {collapsed[0]} took the winning move from >50% to <1%")
    else:
        print("no collapse in these iterations")
    return 0


def _header() -> str:
    cols = ("it", "rollout success", "wins", "p before", "p after", "adv", "V", "G", "approx_kl")
    return " | ".join(cols)


def _line(r: dict) -> str:
    return (
        f"{r['it']:>2} | {r['success']:>15.0%} | {r['won']:>4} | {r['p_before']:>8.3f} | "
        f"{r['p_after']:>7.3f} | {r['adv']:>+5.2f} | {r['V']:>5.2f} | {r['G']:>5.2f} | {r['approx_kl']:.4f}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
