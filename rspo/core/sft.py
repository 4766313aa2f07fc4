"""Supervised warm start on expert demonstrations (TRL's SFTTrainer) and the cached default policy (docs/design.md §5).

RL in the paper starts from an instruct model that already solves some tasks. Offline, the kit's
stand-in is the tiny model of :mod:`rspo.core.policies.tiny` fine-tuned on the environment expert's
(prompt, action) pairs - the same per-step prompts RL uses (:func:`rspo.core.rollout.expert_demonstrations`)
- for a short budget, so that it lands at a modest greedy success rate: imperfect but non-trivial.

Each demonstration is a prompt-completion pair: the prompt is the chat-template text
``policy.render_prompt(prompt)``, the completion ``policy.completion_text(action)`` (the action and
``<|im_end|>``). :func:`demo_dataset` hands them to TRL already tokenised with the policy's own
``encode_prompt`` / ``encode_completion`` (and a completion mask), so the tokens trained are exactly the
tokens score mode sums, long prompts cut the same way; the loss is on the completion only.

>>> from rspo.core.sft import load_or_build_default, prompt_settings
>>> policy = load_or_build_default("household")   # first call: builds (minutes); later calls: seconds
>>> prompt_settings("household")                   # RL must build prompts as the warm start did
{'history': 2, 'show_admissible': False}

The cache folder (``<cache_root>/default-<env>-<key>/``, see :func:`default_policy_path`) holds the
policy (``LMPolicy.save_pretrained``: model, tokenizer, ``rspo_policy.json``) and ``warmstart.json``:
the config, the training losses, the build time and the measured greedy success on the environment's
evaluation splits. The key hashes everything that determines the weights (the config, the model
config, the tokenizer recipe and data, :data:`SFT_VERSION`); folders are written atomically.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rspo.core.atomic import atomic_dir
from rspo.core.policies.tiny import TINY_MODEL, build_tiny_model
from rspo.core.policies.tokenizer import cache_root, default_tokenizer, tokenizer_key

SFT_VERSION = 1  # bump when the warm-start code changes what it builds
log = logging.getLogger(__name__)


@dataclass
class WarmStartConfig:
    """How the default policy of one environment is warm-started (every field is part of the cache key).

    :func:`default_config` gives the kit's choice per environment (its registry entry's ``warm_start``).
    """

    env: str = "household"  # environment whose train-split expert is imitated
    n_demo_tasks: int = 1500  # expert episodes, on the first n tasks of the train split
    epochs: float = 1.0  # passes over the demonstrations (used only when max_steps <= 0)
    max_steps: int = 1000  # optimizer steps (batches of batch_size demonstrations); <= 0: set by epochs
    learning_rate: float = 5e-3  # AdamW peak learning rate (linear warmup, then cosine decay to 0)
    warmup_ratio: float = 0.05  # fraction of the steps with linear warmup
    weight_decay: float = 0.0  # AdamW weight decay
    batch_size: int = 16  # demonstrations per optimizer step
    seed: int = 0  # model initialisation and data order
    history: int = -1  # H, observation/action pairs in the prompt (RL must use the same); -1: the env's
    show_admissible: bool = True  # list the admissible actions in the prompt (RL must use the same)
    max_prompt_tokens: int = 1024  # longer prompts are cut as LMPolicy cuts them
    vocab_size: int = 3072  # BPE vocabulary of the shared tokenizer (plus the shop's product ids)
    random_frac: float = 0.0  # chance a demo step is a random admissible action (1: random play)
    every_action: bool = False  # each visited state once per admissible action (uniform targets)
    env_options: dict = dataclasses.field(default_factory=dict)  # the environment's options (detour: length)

    def __post_init__(self):
        import rspo.core.envs

        spec = rspo.core.envs.spec(self.env)  # a clear error for an unknown environment
        if spec.tokenizer_family is None:
            raise ValueError(
                f"environment {self.env!r} has no offline tokenizer, so no warm-started default policy; "
                "train a named model (TrainConfig.model), or name a tokenizer_family in its EnvSpec"
            )
        if self.history == -1:
            self.history = spec.history
        if self.n_demo_tasks < 1 or self.batch_size < 1 or self.max_prompt_tokens < 8 or self.history < 0:
            raise ValueError("n_demo_tasks and batch_size must be >= 1, history >= 0, max_prompt_tokens >= 8")
        if self.max_steps <= 0 and self.epochs <= 0:
            raise ValueError("set max_steps > 0 or epochs > 0")
        if not 0.0 <= self.random_frac <= 1.0:
            raise ValueError(f"random_frac must be in [0, 1], got {self.random_frac}")

    @property
    def tokenizer_family(self) -> str:
        import rspo.core.envs

        return rspo.core.envs.spec(self.env).tokenizer_family


def default_config(env: str, env_options: dict | None = None) -> WarmStartConfig:
    """The warm-start config the kit uses for ``env``: its registry entry's (:mod:`rspo.core.envs.registry`:
    ``show_admissible`` and ``warm_start``, chosen to land at 10-40 % greedy success in 3-4 CPU minutes).
    ``env_options`` (``TrainConfig.env_options``): the environment's own options, those that change only
    the process reward (its class's ``reward_only_options``) left out - the warm start imitates play."""
    import rspo.core.envs

    spec = rspo.core.envs.spec(env)
    options = {k: v for k, v in (env_options or {}).items() if k not in spec.cls.reward_only_options}
    return WarmStartConfig(env=env, **spec.warm_start_fields(), env_options=options)


def prompt_settings(env: str, config: WarmStartConfig | None = None) -> dict:
    """``{"history", "show_admissible"}`` of the warm start: the prompt options RL must use with the
    default policy (it was trained on prompts built this way)."""
    config = config or default_config(env)
    return {"history": config.history, "show_admissible": config.show_admissible}


# --- data -----------------------------------------------------------------------------------------
def _demos(config: WarmStartConfig) -> list[tuple[str, list[str], str]]:
    import rspo.core.envs
    from rspo.core.rollout import expert_demonstrations

    task_ids = rspo.core.envs.make(config.env, split="train", **config.env_options).task_ids[
        : config.n_demo_tasks
    ]
    demos = expert_demonstrations(
        config.env,
        "train",
        task_ids,
        env_options=config.env_options,
        history=config.history,
        show_admissible=config.show_admissible,
        random_frac=config.random_frac,
        seed=config.seed,
    )
    if config.every_action:  # the uniform policy's targets, all of them: a denser signal than one sample
        demos = [(prompt, cands, a) for prompt, cands, _ in demos for a in cands]
    return demos


def demo_texts(policy, config: WarmStartConfig) -> dict[str, list[str]]:
    """The expert demonstrations of ``config`` as a prompt-completion text dataset (to read or to log):
    ``{"prompt": [policy.render_prompt(p)], "completion": [policy.completion_text(a)]}``."""
    demos = _demos(config)
    return {
        "prompt": [policy.render_prompt(p) for p, _, _ in demos],
        "completion": [policy.completion_text(a) for _, _, a in demos],
    }


def demo_dataset(policy, config: WarmStartConfig):
    """The demonstrations tokenised exactly as the policy scores them: ``input_ids`` = prompt tokens
    (``policy.encode_prompt``, so cut to ``max_prompt_tokens`` the same way) + completion tokens
    (``policy.encode_completion``), ``completion_mask`` = 1 on the completion. A ``datasets.Dataset``
    that TRL takes as already processed (it builds the completion-only labels from the mask)."""
    import datasets

    demos = _demos(config)
    tok = policy.tokenizer
    texts = [policy.render_prompt(p) for p, _, _ in demos]
    prompt_ids = tok(texts, add_special_tokens=False)["input_ids"]  # batched: fast
    rows: dict[str, list] = {"input_ids": [], "completion_mask": []}
    for (prompt, _, action), ids in zip(demos, prompt_ids, strict=True):
        if len(ids) > policy.max_prompt_tokens:
            ids = policy.encode_prompt(prompt)
        completion = policy.encode_completion(action)
        rows["input_ids"].append(ids + completion)
        rows["completion_mask"].append([0] * len(ids) + [1] * len(completion))
    return datasets.Dataset.from_dict(rows)


# --- training -------------------------------------------------------------------------------------
def _loss_callback(losses: list[float], total: int):
    from tqdm.auto import tqdm
    from transformers import TrainerCallback

    class LossLog(TrainerCallback):
        """Keeps the logged training losses; one tqdm bar instead of the Trainer's printed dicts."""

        def on_train_begin(self, args, state, control, **kw):
            self.bar = tqdm(total=total, desc="warm start", unit="step", leave=False)

        def on_step_end(self, args, state, control, **kw):
            self.bar.update(1)

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "loss" in logs:
                losses.append(float(logs["loss"]))
                self.bar.set_postfix(loss=f"{losses[-1]:.3f}")

        def on_train_end(self, args, state, control, **kw):
            self.bar.close()

    return LossLog()


def _completion_trainer_class():
    """SFTTrainer whose loss projects only the completion positions onto the vocabulary.

    The loss is TRL's (mean NLL of the completion tokens); TRL's fused head scores every position on
    a CPU, which for a tiny model with short completions and long prompts doubles the step time.
    """
    import torch
    from trl import SFTTrainer

    class CompletionSFTTrainer(SFTTrainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            labels = inputs["labels"][:, 1:]  # (B, T-1), -100 outside the completion
            mask = labels != -100  # (B, T-1)
            hidden = model.get_decoder()(
                input_ids=inputs["input_ids"], attention_mask=inputs.get("attention_mask"), use_cache=False
            ).last_hidden_state[:, :-1]  # (B, T-1, H)
            logits = model.get_output_embeddings()(hidden[mask]).float()  # (n, V)
            n = mask.sum() if num_items_in_batch is None else num_items_in_batch
            loss = torch.nn.functional.cross_entropy(logits, labels[mask], reduction="sum")
            loss = loss / torch.as_tensor(n, device=loss.device).clamp(min=1)
            with torch.no_grad():
                acc = (logits.argmax(-1) == labels[mask]).float().mean().item() if mask.any() else 0.0
            self._metrics["train" if model.training else "eval"]["mean_token_accuracy"].append(acc)
            return (loss, {"logits": logits}) if return_outputs else loss

    return CompletionSFTTrainer


def _no_checkpointing(config_class) -> dict:
    """Turn off TRL's default activation (gradient) checkpointing: it only slows a tiny model down.
    Recent transformers renamed ``gradient_checkpointing`` to ``activation_checkpointing``."""
    fields = config_class.__dataclass_fields__
    return {
        "activation_checkpointing"
        if "activation_checkpointing" in fields
        else "gradient_checkpointing": False
    }


def warm_start(policy, config: WarmStartConfig, *, log_every: int = 5, threads: int | None = 1) -> dict:
    """Fine-tune ``policy.model`` in place on the expert demonstrations of ``config`` with SFTTrainer,
    with ``threads`` torch threads on a CPU (None: as torch is set; the default 1 is the robust choice,
    see below).

    Returns ``{"n_demos", "steps", "losses" (logged every ``log_every`` steps), "train_s"}``.
    """
    import math
    import tempfile

    import datasets
    import torch
    from transformers import PrinterCallback
    from trl import SFTConfig

    t0 = time.perf_counter()
    # playing the demonstrations and tokenizing them comes before the bar: tens of seconds when idle,
    # minutes on a busy machine, so it says so every 20 s
    with heartbeat(f"warm start of {config.env}: playing and tokenizing the demonstrations"):
        data = demo_dataset(policy, config)
    steps = (
        config.max_steps
        if config.max_steps > 0
        else math.ceil(config.epochs * math.ceil(len(data) / config.batch_size))
    )
    losses: list[float] = []
    model = policy.model
    was_training = model.training
    # one thread on a CPU: beside other work two threads wait on each other (measured on a 2-core
    # machine under load: 8.0 s per step with 2 threads, 0.14 s with 1; benchmarks/bench_warmstart_threads.py)
    before = torch.get_num_threads()
    if threads and model.device.type == "cpu":
        torch.set_num_threads(threads)
    with tempfile.TemporaryDirectory(prefix="rspo-sft-") as out:
        args = SFTConfig(
            output_dir=out,
            max_steps=steps,
            per_device_train_batch_size=config.batch_size,
            learning_rate=config.learning_rate,
            lr_scheduler_type="cosine",
            warmup_steps=config.warmup_ratio,
            weight_decay=config.weight_decay,
            seed=config.seed,
            data_seed=config.seed,
            completion_only_loss=True,
            max_length=None,  # prompts are already cut to max_prompt_tokens, as the policy cuts them
            # the default random order: grouping by length cuts padding but gives batches of look-alike
            # steps, and measured worse (loss 0.42 vs 0.26 after 1,000 household steps)
            **_no_checkpointing(SFTConfig),
            bf16=False,
            use_cpu=model.device.type == "cpu",
            save_strategy="no",
            report_to="none",
            logging_steps=log_every,
            disable_tqdm=True,
            dataloader_num_workers=0,
        )
        bars = datasets.is_progress_bar_enabled()
        datasets.disable_progress_bars()  # one bar for the whole warm start, no per-step prints
        try:
            trainer = _completion_trainer_class()(
                model=model,
                args=args,
                train_dataset=data,
                processing_class=policy.tokenizer,
                callbacks=[_loss_callback(losses, steps)],
            )
            trainer.remove_callback(PrinterCallback)
            trainer.train()
        finally:
            torch.set_num_threads(before)
            if bars:
                datasets.enable_progress_bars()
    model.train(was_training)
    if not was_training:
        model.eval()
    return {"n_demos": len(data), "steps": steps, "losses": losses, "train_s": time.perf_counter() - t0}


# --- evaluation -----------------------------------------------------------------------------------
def evaluate_greedy(
    policy,
    env: str,
    split: str,
    n_tasks: int = 140,
    *,
    history: int = 2,
    show_admissible: bool = True,
    env_options: dict | None = None,
) -> dict:
    """Greedy success (and mean score) of ``policy`` on the first ``n_tasks`` tasks of ``split``."""
    from rspo.core.rollout import collect, make_envs

    envs = make_envs(env, split, 1, **(env_options or {}))
    task_ids = envs[0].task_ids[:n_tasks]
    envs += make_envs(env, split, len(task_ids) - 1, **(env_options or {}))
    t0 = time.perf_counter()
    episodes = collect(
        policy, envs, task_ids, 1, history=history, show_admissible=show_admissible, greedy=True
    )
    n = len(episodes)
    return {
        "split": split,
        "n_tasks": n,
        "success": sum(e.won for e in episodes) / n,
        "score": 100.0 * sum(e.score for e in episodes) / n,
        "mean_length": sum(len(e) for e in episodes) / n,
        "eval_s": time.perf_counter() - t0,
    }


@contextlib.contextmanager
def heartbeat(what: str, every: float = 20.0, stream=None, announce: bool = True):
    """Say ``what`` on ``stream`` (stderr) now (unless not ``announce``: the caller said it) and every
    ``every`` seconds until the block ends, with the time so far: a step that is silent for minutes
    looks hung."""
    stream = stream or sys.stderr
    stop, t0 = threading.Event(), time.perf_counter()
    if announce:
        print(f"{what} ...", file=stream, flush=True)

    def beat():
        while not stop.wait(every):
            print(f"  ... {what}: {time.perf_counter() - t0:.0f} s", file=stream, flush=True)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


# --- the cached default policy --------------------------------------------------------------------
def cache_key(config: WarmStartConfig) -> str:
    """A hash of everything that determines the warm-started model."""
    fields = dataclasses.asdict(config)
    for added in ("random_frac", "every_action", "env_options"):  # added later: older configs keep their keys
        if not fields[added]:
            del fields[added]
    spec = {
        "version": SFT_VERSION,
        "config": fields,
        "model": TINY_MODEL,
        "tokenizer": tokenizer_key(config.vocab_size, config.tokenizer_family),
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def default_policy_path(env: str, config: WarmStartConfig | None = None) -> Path:
    """The cache folder of the warm-started default policy of ``env`` (it may not exist yet)."""
    config = config or default_config(env)
    if config.env != env:
        raise ValueError(f"config is for env {config.env!r}, not {env!r}")
    return cache_root() / f"default-{env}-{cache_key(config)}"


def fresh_policy(config: WarmStartConfig):
    """The untrained tiny policy a warm start of ``config`` begins from (its tokenizer, its seed)."""
    from rspo.core.policies.lm import LMPolicy

    tok = default_tokenizer(config.vocab_size, config.tokenizer_family)
    return LMPolicy(
        build_tiny_model(tok, seed=config.seed),
        tok,
        action_mode="score",
        max_prompt_tokens=config.max_prompt_tokens,
    )


def build_default(
    env: str, config: WarmStartConfig | None = None, *, evaluate: bool = True, eval_tasks: int = 140
) -> Path:
    """Build the warm-started default policy of ``env`` into its cache folder (atomically) and return it.

    ``evaluate`` measures greedy success on the environment's evaluation splits (the first ``eval_tasks``
    tasks of each; about 1.5 minutes for household's two, seconds for the shop) into
    ``warmstart.json``; it does not change the model. If another process finished the folder first,
    its copy is kept.
    """
    import rspo.core.envs

    config = config or default_config(env)
    path = default_policy_path(env, config)
    t0 = time.perf_counter()
    policy = fresh_policy(config)
    log.info("rspo: warm-starting the default %s policy, once (a few minutes) -> %s", env, path)
    stats = warm_start(policy, config)
    record = {
        "config": dataclasses.asdict(config),
        "sft_version": SFT_VERSION,
        "params": sum(p.numel() for p in policy.model.parameters()),
        **stats,
        "build_s": time.perf_counter() - t0,
    }
    if evaluate:
        splits = rspo.core.envs.env_class(env).eval_splits
        with heartbeat(f"warm start of {env}: measuring its greedy success on {', '.join(splits)}"):
            record["eval"] = {
                split: evaluate_greedy(
                    policy,
                    env,
                    split,
                    eval_tasks,
                    history=config.history,
                    show_admissible=config.show_admissible,
                    env_options=config.env_options,
                )
                for split in splits
            }
    with atomic_dir(path) as tmp:
        policy.save_pretrained(tmp)
        (tmp / "warmstart.json").write_text(json.dumps(record, indent=1) + "\n")
    log.info("rspo: default %s policy built in %.0f s: %s", env, record["build_s"], _summary(record))
    return path


def _summary(record: dict) -> str:
    evals = record.get("eval", {})
    return ", ".join(f"{s} success {e['success']:.1%}" for s, e in evals.items()) or "not evaluated"


def load_or_build_default(
    env: str,
    action_mode: str = "score",
    config: WarmStartConfig | None = None,
    *,
    evaluate: bool = True,
    **policy_options,
):
    """The warm-started default :class:`~rspo.core.policies.lm.LMPolicy` of ``env``: built once (3-4 minutes
    on a 2-core CPU, plus ``evaluate``, see :func:`build_default`), then loaded from the cache in seconds.

    ``policy_options`` go to ``LMPolicy.from_pretrained`` (``lora``, ``value_head``, ``device``, ...).
    Prompts for it must be built with :func:`prompt_settings`.
    """
    from rspo.core.policies.lm import LMPolicy

    path = default_policy_path(env, config)
    if not path.is_dir():
        with build_lock(path):  # several processes of a grid: one builds, the others wait and load it
            if not path.is_dir():
                build_default(env, config, evaluate=evaluate)
    return LMPolicy.from_pretrained(path, action_mode=action_mode, **policy_options)


@contextlib.contextmanager
def build_lock(path: Path):
    """An exclusive lock on building the cache folder ``path`` (``<path>.lock``, ``fcntl.flock``: the
    kernel drops it when its holder dies). A process that waits says so every 20 s."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # no flock (Windows): the atomic folder write still keeps one copy
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            with heartbeat(f"waiting for another process to finish building {path.name}"):
                fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            # a process still waiting holds the old file and re-checks the folder once it gets the lock
            Path(handle.name).unlink(missing_ok=True)
            fcntl.flock(handle, fcntl.LOCK_UN)


def warmstart_record(env: str, config: WarmStartConfig | None = None) -> dict | None:
    """The ``warmstart.json`` of a built default policy (None if not built)."""
    f = default_policy_path(env, config) / "warmstart.json"
    return json.loads(f.read_text()) if f.is_file() else None
