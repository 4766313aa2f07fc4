"""Score-mode scoring with the output head on the predicting columns only, against the model's own forward.

``rspo.core.policies.scoring.score_segments`` runs the decoder alone and applies the output head to the M
columns that predict a continuation token, where the model's logits are its head on its decoder's last
hidden state (checked once per model). The alternative, the model's own forward with
``logits_to_keep``, makes the ``(B, T - start + 1, V)`` logits, indexes the M rows out of them and, in
the backward pass, scatters their gradient back. This script times both on the same turns, side by
side and alternating, without gradient (rollouts, evaluation) and with forward + backward (updates):

    python benchmarks/bench_scoring_head.py                 # household, the cpu profile's batch
    python benchmarks/bench_scoring_head.py --env shop --repeats 5

It uses the warm-started default (built and cached on first use, about 4 minutes), one thread, and
one iteration's rollout at the cpu profile (``rspo.study.experiments.run_config``: its tasks, copies, horizon,
micro-batch and prompts).
"""

from __future__ import annotations

import argparse
import time

import torch

from rspo.core.policies import scoring
from rspo.core.rollout import collect, make_envs
from rspo.core.sft import load_or_build_default
from rspo.core.trainer import resolve_show_admissible
from rspo.core.update import turn_inputs
from rspo.study.experiments import run_config


def timed(policy, turns, micro: int, grad: bool) -> float:
    start = time.perf_counter()
    for s in range(0, len(turns), micro):
        chunk = turn_inputs(turns[s : s + micro])
        if grad:
            policy.logprobs(chunk, values=False).logp.sum().backward()
        else:
            with torch.no_grad():
                policy.logprobs(chunk, values=False)
    policy.model.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="household", choices=["household", "shop"])
    parser.add_argument("--turns", type=int, default=256, help="turns timed (the first of the rollout)")
    parser.add_argument("--repeats", type=int, default=3, help="alternating repeats; the best is kept")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    cfg = run_config("cpu", args.env, "grpo", "outcome", 0, "unused")  # one iteration of the cpu profile
    policy = load_or_build_default(args.env, micro_batch=cfg.micro_batch)
    n = cfg.tasks_per_iter * cfg.group_size
    envs = make_envs(args.env, "train", n, max_steps=cfg.max_steps or None)
    episodes = collect(
        policy,
        envs,
        envs[0].task_ids[: cfg.tasks_per_iter],
        cfg.group_size,
        history=cfg.history,
        show_admissible=resolve_show_admissible(cfg),
        generator=torch.Generator().manual_seed(0),
    )
    turns = [t for ep in episodes for t in ep.turns][: args.turns]
    model = policy.model
    tokens = sum(len(policy.encode_prompt(t.prompt)) for t in turns)
    cont = sum(len(policy.encode_completion(c)) for t in turns for c in t.candidates)
    print(
        f"{args.env}: {len(turns)} turns, {tokens / len(turns):.0f} prompt and {cont / len(turns):.0f} "
        f"candidate tokens per turn, micro-batch {cfg.micro_batch}, {args.threads} thread(s)"
    )

    def use_split(on: bool) -> None:
        scoring._HEAD_SPLIT[model] = on  # the verdict head_split caches; False = the model's own forward

    use_split(False)
    with torch.no_grad():
        want = policy.logprobs(turn_inputs(turns[: cfg.micro_batch]), values=False).logp
    scoring._HEAD_SPLIT.pop(model, None)  # checked afresh, as in a run
    with torch.no_grad():
        got = policy.logprobs(turn_inputs(turns[: cfg.micro_batch]), values=False).logp
    if not scoring._HEAD_SPLIT.get(model):
        raise SystemExit("this model's logits are not its head on its decoder's output: nothing to compare")
    print(f"largest log-prob difference between the two: {float((got - want).abs().max()):.2e}")

    print("| pass | model's own forward (s) | head on predicting columns (s) | ratio |")
    print("|---|---|---|---|")
    for grad in (False, True):
        best = {False: float("inf"), True: float("inf")}
        for _ in range(args.repeats):
            for on in (False, True):
                use_split(on)
                best[on] = min(best[on], timed(policy, turns, cfg.micro_batch, grad))
        label = "forward + backward" if grad else "forward, no gradient"
        print(f"| {label} | {best[False]:.2f} | {best[True]:.2f} | {best[False] / best[True]:.2f} |")
    scoring._HEAD_SPLIT.pop(model, None)


if __name__ == "__main__":
    main()
