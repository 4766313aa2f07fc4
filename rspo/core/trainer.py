"""One training loop for every algo x reward mode, on CPU and GPU (docs/design.md §8).

The loop, in a fixed order, once per iteration:

    seed -> rollout (B tasks x G copies) -> rewards -> advantages -> PPO-clip token loss + KL
    (+ value loss) -> update -> evaluate -> log -> checkpoint

With ``reward="rspo"`` (the reward swap, docs/design.md §7) an explorer (:class:`rspo.core.explorer.Explorer`)
also rolls out the same tasks, trains on the dense reward, and its episodes - relabelled with the
outcome reward - reach the learner as the run's variant hands them over
(:data:`rspo.core.registry.SWAP_VARIANTS`): through a replay buffer (``swap_variant="offpolicy"``) or by
joining its groups (``"mixed"``); ``"schedule"`` is one policy on the dense reward first and the
outcome reward after.

Everything an iteration draws (its tasks, its sampling generator, torch's global RNG) is derived
from ``(seed, iteration)``, so a run resumed from a checkpoint ends exactly where the uninterrupted
run ends, and the same seed on the same machine gives the same metrics.

Usage::

    from rspo.core.config import TrainConfig
    from rspo.core.trainer import Trainer
    Trainer(TrainConfig(env="household", algo="gigpo", reward="dense", iterations=20)).run()
"""

from __future__ import annotations

import functools
import random
import time
from contextlib import nullcontext

import torch

from rspo.core.config import TrainConfig
from rspo.core.explorer import success_keys
from rspo.core.metrics import MetricsLog, episode_metrics
from rspo.core.rewards import RewardSpec, compute_rewards
from rspo.core.rollout import Episode, collect, make_envs
from rspo.core.streams import (
    STREAM_EXPLORER,
    STREAM_INIT,
    STREAM_ITERATION,
    STREAM_ROLLOUT,
    STREAM_TASKS,
    derive,
)
from rspo.core.update import TurnBatch, build_batch, ppo_update

POOL_SEED = 20260701  # TrainConfig.task_pool's draw: one pool per size, shared by every run
# the run's random streams (STREAM_*, derive) are rspo.core.streams': their numbers never change


def pool_tasks(task_ids: list[str], n: int) -> list[str]:
    """The fixed pool of ``n`` training tasks ``TrainConfig.task_pool`` names: drawn with a fixed seed,
    so every run (any seed, algo or reward) of a pool size trains on the same tasks."""
    if not 0 < n <= len(task_ids):
        raise ValueError(f"a task pool holds 1..{len(task_ids)} tasks, got {n}")
    return random.Random(POOL_SEED).sample(list(task_ids), n)


def resolve_device(cfg: TrainConfig, dist=None) -> tuple[torch.device, torch.dtype | None]:
    """The device (this process's GPU under ``accelerate launch``) and the autocast dtype (None = fp32)."""
    cuda = torch.cuda.is_available()
    if cfg.device == "cuda" and not cuda:
        raise ValueError(
            "TrainConfig.device='cuda' but no CUDA device is available; use device='auto' or 'cpu'"
        )
    use_cuda = cfg.device == "cuda" or (cfg.device == "auto" and cuda)
    device = dist.device(use_cuda) if dist is not None else torch.device("cuda" if use_cuda else "cpu")
    if cfg.precision == "bf16" or (cfg.precision == "auto" and device.type == "cuda"):
        return device, torch.bfloat16
    return device, None


def load_policy(cfg: TrainConfig, device: torch.device | None = None):
    """The policy a config names: the tiny warm-started default, or ``cfg.model`` (+ LoRA)."""
    from rspo.core.policies import LMPolicy

    value_head = cfg.critic
    common = dict(
        action_mode=cfg.action_mode,
        value_head=value_head,
        max_prompt_tokens=cfg.max_prompt_tokens,
        max_new_tokens=cfg.max_new_tokens,
        micro_batch=cfg.micro_batch,
    )
    if cfg.model:
        kwargs = dict(lora=cfg.lora, gguf_file=cfg.gguf_file or None, device=device)
        return LMPolicy.from_pretrained(cfg.model, **kwargs, **common)
    from rspo.core.sft import default_config, load_or_build_default

    config = default_config(cfg.env, cfg.env_options) if cfg.env_options else None
    return load_or_build_default(cfg.env, config=config, device=device, **common)


def resolve_show_admissible(cfg: TrainConfig) -> bool:
    """Whether prompts list the admissible actions: as the default policy was warm-started (``auto``,
    household: no, shop: yes - RL prompts must match the SFT prompts), yes for a named model."""
    if cfg.show_admissible != "auto":
        return cfg.show_admissible == "yes"
    if cfg.model:
        return True
    from rspo.core.sft import prompt_settings

    return bool(prompt_settings(cfg.env)["show_admissible"])


class Trainer:
    """Builds everything a :class:`TrainConfig` names and runs the loop; see the module docstring."""

    def __init__(self, cfg: TrainConfig, policy=None, initial_eval: dict | None = None):
        """``policy`` replaces the one ``cfg`` names; ``initial_eval`` is logged as iteration 0 instead
        of evaluating (a benchmark that starts many runs from one policy evaluates it once)."""
        from rspo.core.distributed import Dist

        self.cfg = cfg
        self.initial_eval = initial_eval
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.dist = Dist()
        # swap_budget="matched": the learner rolls out the first half of the iteration's tasks and
        # the explorer the second half; otherwise both roll out all of them
        self.learner_tasks = cfg.tasks_per_iter // 2 if cfg.swap_budget == "matched" else cfg.tasks_per_iter
        if self.learner_tasks % self.dist.world:
            raise ValueError(
                f"TrainConfig.tasks_per_iter={cfg.tasks_per_iter} must be a multiple of the "
                f"{self.dist.world} processes (each rolls out an equal share of the tasks"
                + (", of each half with swap_budget='matched')" if cfg.swap_budget == "matched" else ")")
            )
        self.local_tasks = self.learner_tasks // self.dist.world
        self.device, self.autocast_dtype = resolve_device(cfg, self.dist)
        self.run_dir = cfg.run_dir
        torch.manual_seed(derive(cfg.seed, STREAM_INIT))
        self.policy = policy if policy is not None else load_policy(cfg, self.device)
        self.policy_given = policy is not None
        self.show_admissible = resolve_show_admissible(cfg)
        self.params = [p for p in self.policy.trainable_parameters()]
        self.optimizer = torch.optim.AdamW(self.params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        env_options = cfg.env_kwargs
        n = self.local_tasks * cfg.group_size
        self.envs = make_envs(cfg.env, "train", n, **env_options)
        self.train_tasks = self.envs[0].task_ids
        if cfg.task_pool:
            self.train_tasks = pool_tasks(self.train_tasks, cfg.task_pool)
        self.eval_envs: dict[str, list] = {}
        self.env_options = env_options
        self.spec = RewardSpec(cfg.outcome_scale, cfg.invalid_penalty, cfg.process_weight)
        self.iteration = 0
        self.env_steps = 0
        self.run_id: str | None = None  # the run's identity, set by prepare_run_dir (rspo.core.checkpoint)
        self.progress_lines = False  # rspo train's stage lines (rspo.core.plan.Progress) instead of the bar
        self.log = MetricsLog(self.run_dir / "metrics.jsonl")
        # distinct successful trajectories found so far (task, actions): behaviour-space coverage
        self.successes: set[str] = set()
        self.explorer = (
            None  # RSPO's explorer beside the learner (rspo.core.explorer), when the variant has one
        )
        if cfg.uses_explorer:
            from rspo.core.explorer import Explorer

            self.explorer = Explorer(self.policy, cfg)

    @functools.cached_property
    def fingerprint(self) -> dict:
        """What the run starts from and runs under (:mod:`rspo.core.fingerprint`; {} off the main process):
        taken on first use, which :meth:`run` makes before a checkpoint replaces the weights; a trainer
        that only evaluates never pays for it."""
        from rspo.core.fingerprint import run_fingerprint

        return (
            run_fingerprint(self.cfg, self.policy, warm_start=not self.policy_given) if self.dist.main else {}
        )

    # --- the pieces of one iteration ------------------------------------------------------------
    def autocast(self):
        if self.autocast_dtype is None:
            return nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)

    def sample_tasks(self, iteration: int, round_: int = 0, explorer: bool = False) -> list[str]:
        """This process's share of the iteration's ``tasks_per_iter`` tasks (all of them in one process);
        with ``swap_budget="matched"`` of its first half (the learner's) or, for ``explorer``, its second."""
        rng = random.Random(derive(self.cfg.seed, STREAM_TASKS, iteration, round_))
        tasks = rng.sample(self.train_tasks, self.cfg.tasks_per_iter)
        if self.cfg.swap_budget == "matched":
            tasks = tasks[self.learner_tasks :] if explorer else tasks[: self.learner_tasks]
        return self.dist.share(tasks)

    def rollout(
        self, iteration: int, round_: int = 0, policy=None, stream: int = STREAM_ROLLOUT
    ) -> list[Episode]:
        cfg = self.cfg
        parts = (stream, iteration, round_) + ((self.dist.rank,) if self.dist.active else ())
        generator = torch.Generator(device="cpu").manual_seed(derive(cfg.seed, *parts))
        with self.autocast():
            return collect(
                policy or self.policy,
                self.envs,
                self.sample_tasks(iteration, round_, explorer=stream == STREAM_EXPLORER),
                cfg.group_size,
                history=cfg.history,
                show_admissible=self.show_admissible,
                temperature=cfg.temperature,
                generator=generator,
            )

    def batch(self, episodes: list[Episode], reward: str) -> TurnBatch:
        """Rewards and advantages of ``episodes`` as one flat turn batch."""
        return build_batch(episodes, compute_rewards(reward, episodes, self.spec), self.cfg)

    def collect_iteration(self, iteration: int) -> tuple[list[Episode], TurnBatch, dict]:
        """Rollout + rewards + advantages, with ``no_signal`` handling; returns episodes, batch, metrics."""
        cfg = self.cfg
        t0 = time.perf_counter()
        reward = cfg.reward_at(iteration)
        episodes = self.rollout(iteration)
        self.env_steps += sum(len(ep) for ep in episodes)
        batch = self.batch(episodes, reward)
        extra = {"rollout/no_signal_groups": batch.no_signal_groups}
        if cfg.no_signal == "resample" and batch.no_signal_groups:
            keep = [ep for ep in episodes if ep.group not in batch.no_signal_group_ids]
            for round_ in range(1, cfg.resample_tries + 1):
                missing = self.local_tasks - len({ep.group for ep in keep})
                if missing <= 0:
                    break
                fresh = self.rollout(iteration, round_)
                fresh_batch = self.batch(fresh, reward)
                good = sorted({ep.group for ep in fresh} - fresh_batch.no_signal_group_ids)[:missing]
                offset = round_ * self.local_tasks
                for ep in fresh:
                    if ep.group in good:
                        ep.group += offset
                        keep.append(ep)
                self.env_steps += sum(len(ep) for ep in fresh)
            if keep:
                episodes = keep
                batch = self.batch(episodes, reward)
            extra["rollout/resampled_groups"] = len(
                {ep.group for ep in episodes if ep.group >= self.local_tasks}
            )
        extra["time/rollout"] = time.perf_counter() - t0
        return episodes, batch, extra

    def update(self, batch: TurnBatch, iteration: int) -> dict:
        t0 = time.perf_counter()
        stats = ppo_update(
            self.policy,
            self.optimizer,
            self.params,
            batch,
            self.cfg,
            iteration,
            self.autocast,
            self.dist,
            cache_reference=True,
        )
        stats["time/update"] = time.perf_counter() - t0
        return stats

    def swap_step(self, it: int, episodes: list[Episode], batch: TurnBatch) -> tuple[TurnBatch, dict]:
        """RSPO's explorer half of an iteration (:class:`rspo.core.explorer.Explorer`): its rollout, the
        variant's hand-over of its episodes into the learner's ``batch``, its dense-reward update."""
        explored, out = self.explorer.explore(self, it)
        batch, handed = self.explorer.hand_over(self, it, episodes, batch, explored)
        out.update(handed)
        out.update(self.explorer.train(self, it, explored))
        return batch, out

    def checkpoint_extra(self) -> dict:
        """The successes found so far; RSPO: the explorer's state (its policy, optimizer, buffer)."""
        extra = {"successes": sorted(self.successes), "explorer_successes": []}
        return extra if self.explorer is None else {**extra, **self.explorer.state()}

    def load_checkpoint_extra(self, extra: dict) -> None:
        self.successes = set(extra.get("successes", []))
        if self.explorer is not None:
            self.explorer.load_state(extra)

    def evaluate(self) -> dict:
        """Greedy success (and score) of the current policy on the environment's evaluation splits; with
        ``task_pool``, also on the pool's training tasks (``eval/pool/*``, kept out of ``eval/success``)."""
        from rspo.core import envs as envs_mod

        cfg = self.cfg
        t0, c0 = time.perf_counter(), time.process_time()
        out: dict = {}
        counts: dict[str, int] = {}  # episodes per split: eval/success and eval/score weigh by them
        for split in envs_mod.env_class(cfg.env).eval_splits:
            if split not in self.eval_envs:
                probe = envs_mod.make(cfg.env, split=split, **self.env_options)
                n = len(probe) if cfg.eval_tasks == 0 else min(cfg.eval_tasks, len(probe))
                self.eval_envs[split] = make_envs(cfg.env, split, n, **self.env_options)
            envs = self.eval_envs[split]
            counts[split] = self._eval_tasks(split, envs, envs[0].task_ids[: len(envs)], out)
        total = sum(counts.values())
        for key in ("success", "score"):
            out[f"eval/{key}"] = sum(out[f"eval/{s}/{key}"] * n for s, n in counts.items()) / total
        if cfg.task_pool:
            if "pool" not in self.eval_envs:
                self.eval_envs["pool"] = make_envs(
                    cfg.env, "train", len(self.train_tasks), **self.env_options
                )
            self._eval_tasks("pool", self.eval_envs["pool"], self.train_tasks, out)
        out["time/eval"] = time.perf_counter() - t0
        out["time/cpu_eval"] = time.process_time() - c0
        return out

    def _eval_tasks(self, label: str, envs: list, task_ids: list[str], out: dict) -> int:
        """One greedy episode per task (shared among processes): ``eval/<label>/{success,score,
        episode_len}`` into ``out``; the number of episodes."""
        cfg = self.cfg
        with self.autocast():
            episodes = collect(
                self.policy,
                envs,
                self.dist.share(task_ids),
                1,
                history=cfg.history,
                show_admissible=self.show_admissible,
                greedy=True,
            )
        mine = [(ep.won, ep.score, len(ep)) for ep in episodes]
        results = [r for part in self.dist.gather(mine) for r in part]
        out[f"eval/{label}/success"] = sum(r[0] for r in results) / len(results)
        out[f"eval/{label}/score"] = 100.0 * sum(r[1] for r in results) / len(results)
        out[f"eval/{label}/episode_len"] = sum(r[2] for r in results) / len(results)
        return len(results)

    # --- checkpoints ----------------------------------------------------------------------------
    def save_checkpoint(self, extra: dict | None = None) -> None:
        from rspo.core.checkpoint import save_checkpoint

        save_checkpoint(self, extra)

    def load_checkpoint(self) -> bool:
        from rspo.core.checkpoint import load_checkpoint

        return load_checkpoint(self)

    # --- the loop -------------------------------------------------------------------------------
    def run(self) -> list[dict]:
        """Train for ``cfg.iterations`` iterations (continuing a checkpoint with ``resume``); return the metrics.

        The main process holds the run folder's lock (:class:`rspo.core.atomic.RunLock`) throughout, so a
        second process training the same folder fails at once; it is released however the run ends."""
        from rspo.core.atomic import RunLock
        from rspo.core.checkpoint import check_run_name

        check_run_name(self.cfg)  # before the lock makes the folder: a newline or too long a name
        with RunLock(self.run_dir) if self.dist.main else nullcontext():
            return self._run()

    def _run(self) -> list[dict]:
        from rspo.core.checkpoint import prepare_run_dir

        cfg = self.cfg
        main = self.dist.main
        if main:
            from rspo.core.fingerprint import record

            started = self.fingerprint  # before prepare_run_dir loads a checkpoint's weights
            prepare_run_dir(self)
            record(self.run_dir, started, resumed_at=self.iteration if cfg.resume else None)
        self.dist.barrier()
        if not main and cfg.resume:
            self.load_checkpoint()
        start = time.perf_counter()
        if self.iteration == 0 and cfg.eval_every:
            first = self.initial_eval if self.initial_eval is not None else self.evaluate()
            if main:
                self.log.write({"iteration": 0, "rollout/env_steps": 0, **first})
        bar = None
        if cfg.progress and main and not self.progress_lines:
            from tqdm.auto import tqdm

            bar = tqdm(total=cfg.iterations, initial=self.iteration, desc=cfg.name, unit="it")
        while self.iteration < cfg.iterations:
            it = self.iteration
            t_iter, c_iter = time.perf_counter(), time.process_time()
            self.seed_iteration(it)
            row = self.train_step(it)
            self.iteration = it + 1
            last = self.iteration == cfg.iterations
            if cfg.eval_every and (self.iteration % cfg.eval_every == 0 or last):
                row.update(self.evaluate())
            row["time/iteration"] = time.perf_counter() - t_iter
            # this process's CPU seconds (all its threads): unlike wall time, not inflated when the
            # process is stopped or waits for a core another process holds
            row["time/cpu_iteration"] = time.process_time() - c_iter
            row["time/total"] = time.perf_counter() - start
            if main:
                self.log.write(row)
            # every checkpoint_every iterations and at the end; checkpoint_every=0: only at the end
            if last or (cfg.checkpoint_every and self.iteration % cfg.checkpoint_every == 0):
                steps_by_rank = self.dist.gather(self.env_steps)
                if main:
                    self.save_checkpoint(extra={"env_steps_by_rank": steps_by_rank})
            if bar is not None:
                bar.update(1)
                post = {"success": f"{row['rollout/success']:.2f}", "return": f"{row['reward/return']:.2f}"}
                if "explorer/success" in row:
                    post["explorer"] = f"{row['explorer/success']:.2f}"
                if "eval/success" in row:
                    post["eval"] = f"{row['eval/success']:.2f}"
                bar.set_postfix(post)
        if bar is not None:
            bar.close()
        self.dist.barrier()
        return self.log.read() if main else []

    def seed_iteration(self, it: int) -> None:
        """Seed torch's global generator for iteration ``it``, as :meth:`run` does before each one: an
        iteration run by hand (notebook 04) is then the run's own."""
        torch.manual_seed(derive(self.cfg.seed, STREAM_ITERATION, it))

    def train_step(self, it: int) -> dict:
        """One iteration without evaluation: rollout, rewards, advantages, update; returns its metrics."""
        episodes, batch, extra = self.collect_iteration(it)
        self.successes |= success_keys(episodes)
        extra["rollout/distinct_successes"] = len(self.successes)
        learner_metrics = batch.metrics()  # of the learner's own rollouts, before any swap turns join
        if self.explorer is not None:
            batch, swap_stats = self.swap_step(it, episodes, batch)
            extra.update(swap_stats)
        stats = self.update(batch, it)
        row = {
            "iteration": it + 1,
            **episode_metrics(episodes),
            "rollout/env_steps": self.env_steps,
            "reward/dense": float(
                self.cfg.reward_at(it) == "dense"
            ),  # 1 where the learner saw process rewards
            **learner_metrics,
            **extra,
            **stats,
        }
        if not self.dist.active:
            return row
        from rspo.core.distributed import merge_metrics

        return merge_metrics(self.dist.gather(row))
