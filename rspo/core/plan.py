"""`rspo train` in a terminal: sizes that fit the machine, the run's plan with a measured estimate, and
a line at least every 15 s while it trains (issue 35).

Three pieces, put together by :func:`run_with_progress` for :func:`rspo.cli.train` and
``benchmarks/bench_throughput.py --iteration`` (library use - the experiments' runner, the notebooks -
trains with ``progress=False`` and prints its own lines):

- :func:`machine_sizes`: without a GPU, the sizes no flag set are the ``quick`` profile's
  (:data:`SIZE_FIELDS`; TrainConfig's defaults - B 8 x G 4, horizon 50, 40 iterations - took 485 s
  an iteration on an idle 2-core CPU); with a GPU, TrainConfig's defaults stay.
- :func:`probe` and :func:`plan_text`: before the first iteration, a few measured turns of the
  policy (a rollout of a few environments and one micro-batch's forward and backward pass) give the
  seconds per rollout turn and per update turn; the plan counts the turns (episodes at the full
  horizon: an upper bound) and prints iterations, episodes, turns, evaluation size and the estimate.
- :class:`Progress`: wraps the trainer's stage methods on the instance (``rollout``, ``swap_step``,
  ``update``, ``evaluate``, ``seed_iteration``, ``log.write``; the trainer knows nothing of it), prints
  a line after every iteration and evaluation, and - from a thread - the current stage whenever
  ``every`` seconds passed without one; the ETA comes from the probe until iterations are measured.

The probe changes nothing a run computes: its own environments and sampling generator, torch's global
generator restored, no optimizer step, gradients cleared (``tests/test_plan.py`` checks the metrics).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

# the TrainConfig fields machine_sizes may set: how much work an iteration and a run are
SIZE_FIELDS = ("iterations", "tasks_per_iter", "group_size", "max_steps", "eval_tasks", "threads")
CPU_PROFILE = "quick"  # whose sizes a machine without a GPU gets
EVERY = 15.0  # Progress: the longest silence, in seconds, while a stage runs
TICK = 1.0  # Progress: how often its thread looks


def uses_gpu(device: str = "auto") -> bool:
    """Whether a run with TrainConfig.device ``device`` trains on a GPU here."""
    if device != "auto":
        return device == "cuda"
    import torch

    return torch.cuda.is_available()


def machine_sizes(env: str, reward: str, given: dict, device: str = "auto") -> tuple[dict, str]:
    """The sizes (:data:`SIZE_FIELDS`) ``rspo train`` sets where neither a flag nor the --config file
    did (``given``: the fields they set), and the line that says so; ``({}, "")`` on a GPU."""
    from rspo.core.config import TrainConfig
    from rspo.core.profiles import profile_settings

    if uses_gpu(device):
        return {}, ""
    profile = profile_settings(CPU_PROFILE, env, reward)
    sizes = {k: profile[k] for k in SIZE_FIELDS if k in profile and k not in given}
    if not sizes:
        return {}, ""
    shown = {k: sizes.get(k, given.get(k, getattr(TrainConfig, k))) for k in SIZE_FIELDS}
    horizon = f"horizon {shown['max_steps']}" if shown["max_steps"] else "the environment's horizon"
    note = (
        f"no GPU: sizes of the {CPU_PROFILE} profile where no flag set them - "
        + ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in sizes.items())
        + f" ({shown['iterations']} iterations of {shown['tasks_per_iter']} tasks x {shown['group_size']} "
        f"copies, {horizon}, {shown['eval_tasks'] or 'all'} evaluation tasks per split): an iteration in "
        "well under a minute on 2 CPU cores, where TrainConfig's "
        f"defaults ({TrainConfig.iterations} iterations of {TrainConfig.tasks_per_iter} x "
        f"{TrainConfig.group_size}, horizon 50 in household) took 8 minutes; set a flag to choose, or "
        "--profile cpu for the CPU table's runs"
    )
    return sizes, note


# --- the plan and its estimate --------------------------------------------------------------------
@dataclass
class Rates:
    """Seconds per turn measured by :func:`probe`."""

    rollout: float  # one sampled turn of a rollout (batched as the trainer batches them)
    update: float  # one turn's forward + backward pass of the update
    seconds: float  # how long the probe took


def probe(trainer, envs: int = 8, steps: int = 5) -> Rates:
    """Time ``steps`` turns of ``envs`` environments and one micro-batch of their turns' forward and
    backward pass with the trainer's policy; leaves everything the run computes as it was."""
    import torch

    from rspo.core.rewards import compute_rewards
    from rspo.core.rollout import collect, make_envs
    from rspo.core.update import build_batch

    cfg, policy = trainer.cfg, trainer.policy
    t0 = time.perf_counter()
    width = max(1, min(envs, trainer.local_tasks * cfg.group_size))
    options = {**trainer.env_options, "max_steps": steps}
    with torch.random.fork_rng(devices=[]):
        pool = make_envs(cfg.env, "train", width, **options)
        ends: list[float] = []  # when each batched turn ended
        with trainer.autocast():
            episodes = collect(
                policy,
                pool,
                pool[0].task_ids[:width],
                1,
                history=cfg.history,
                show_admissible=trainer.show_admissible,
                temperature=cfg.temperature,
                generator=torch.Generator().manual_seed(0),
                on_turn=lambda i, live: ends.append(time.perf_counter()),
            )
        # per turn after the first batched turn (the first pays one-time costs: allocations, kernels)
        rollout = (time.perf_counter() - ends[0]) / max(sum(len(ep) for ep in episodes) - width, 1)
        batch = build_batch(episodes, compute_rewards("outcome", episodes, trainer.spec), cfg)
        n = min(len(batch.turns), cfg.micro_batch + 1)
        policy.train()
        try:
            for index in ([0], list(range(1, n))):  # one turn untimed (first-call costs), then a micro-batch
                t2 = time.perf_counter()
                with trainer.autocast():
                    out = policy.logprobs(batch.inputs(index), values=cfg.critic, temperature=cfg.temperature)
                out.logp.float().sum().backward()
        finally:
            policy.eval()
            for p in trainer.params:
                p.grad = None
        update = (time.perf_counter() - t2) / max(n - 1, 1)
    return Rates(rollout=rollout, update=update, seconds=time.perf_counter() - t0)


def horizon(cfg) -> int:
    """The run's horizon: ``max_steps``, else the environment's default."""
    from rspo.core import envs

    return cfg.max_steps or envs.env_class(cfg.env).default_max_steps


def eval_episodes(cfg) -> int:
    """Greedy episodes of one evaluation: ``eval_tasks`` of each evaluation split (0: all of it)."""
    from rspo.core import envs

    n = 0
    for split in envs.env_class(cfg.env).eval_splits:
        size = len(envs.make(cfg.env, split=split))
        n += size if cfg.eval_tasks == 0 else min(cfg.eval_tasks, size)
    return n + (cfg.task_pool if cfg.task_pool else 0)


def evaluations(cfg, start: int = 0) -> int:
    """Evaluations of a run from iteration ``start``: before the first iteration (when it starts at 0),
    every ``eval_every`` iterations and after the last."""
    if not cfg.eval_every:
        return 0
    later = sum(
        1 for i in range(start + 1, cfg.iterations + 1) if i % cfg.eval_every == 0 or i == cfg.iterations
    )
    return later + (start == 0)


@dataclass
class Estimate:
    """The work of a run and its seconds at the probe's rates (episodes at the full horizon)."""

    episodes: int  # rolled out per iteration (learner + explorer)
    turns: int  # at most, per iteration
    update_turns: int  # trained on per iteration, at most (learner, replayed and explorer turns)
    eval_episodes: int  # per evaluation
    evaluations: int  # left in the run
    iteration_s: float  # one iteration without evaluation
    eval_s: float  # one evaluation

    def total(self, iterations: int) -> float:
        return iterations * self.iteration_s + self.evaluations * self.eval_s


def estimate(trainer, rates: Rates) -> Estimate:
    """The plan's counts for ``trainer`` and their seconds at ``rates``."""
    cfg = trainer.cfg
    h = horizon(cfg)
    learner = trainer.learner_tasks * cfg.group_size
    explorer = 0
    if trainer.explorer is not None:
        explorer = (
            (cfg.tasks_per_iter - trainer.learner_tasks) * cfg.group_size
            if cfg.swap_budget == "matched"
            else learner
        )
    replayed = (
        min(cfg.replay_groups, cfg.buffer_groups) * cfg.group_size
        if explorer and cfg.swap_variant == "offpolicy"
        else 0
    )
    mixed = explorer if cfg.swap_variant == "mixed" else 0
    episodes = learner + explorer
    update_turns = (learner + replayed + mixed + explorer) * h
    passes = cfg.ppo_epochs + (1 / 3 if cfg.kl_coef > 0 else 0)  # a reference forward: a third of a pass
    n_eval = eval_episodes(cfg)
    return Estimate(
        episodes=episodes,
        turns=episodes * h,
        update_turns=update_turns,
        eval_episodes=n_eval,
        evaluations=evaluations(cfg, trainer.iteration),
        iteration_s=episodes * h * rates.rollout + update_turns * passes * rates.update,
        eval_s=n_eval * h * rates.rollout,
    )


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    s = int(round(max(seconds, 0)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def plan_text(trainer, est: Estimate, rates: Rates) -> str:
    """The run's plan: what an iteration does, how many, and the estimate of the whole run."""
    cfg = trainer.cfg
    left = cfg.iterations - trainer.iteration
    who = f"{trainer.learner_tasks * cfg.group_size} learner"
    if trainer.explorer is not None:
        who += f" + {est.episodes - trainer.learner_tasks * cfg.group_size} explorer"
    lines = [
        f"plan: {cfg.name} on {trainer.device.type}, {left} iteration(s)"
        + (f" (from {trainer.iteration} of {cfg.iterations})" if trainer.iteration else ""),
        f"  an iteration: {est.episodes} episodes ({who}; {trainer.learner_tasks} tasks x {cfg.group_size} "
        f"copies), at most {est.turns} turns (horizon {horizon(cfg)}), an update of at most "
        f"{est.update_turns} turns",
        f"  {est.evaluations} evaluation(s) of {est.eval_episodes} greedy episodes",
        f"  estimate: about {duration(est.total(left))} (episodes counted at the full horizon) - "
        f"{duration(est.iteration_s)} an iteration, {duration(est.eval_s)} an evaluation; from a "
        f"{rates.seconds:.1f} s probe: {1000 * rates.rollout:.0f} ms a rollout turn, "
        f"{1000 * rates.update:.0f} ms an update turn",
    ]
    return "\n".join(lines)


# --- progress while it trains ---------------------------------------------------------------------
def run_with_progress(trainer, write=print) -> list[dict]:
    """Run ``trainer`` as ``rspo train`` does: the plan (a probe's measured rates and the estimate), then
    :class:`Progress`'s stage lines in place of the trainer's bar; returns the run's rows."""
    rates = probe(trainer)
    est = estimate(trainer, rates)
    write(plan_text(trainer, est, rates))
    trainer.progress_lines = True
    with Progress(trainer, est, write):
        return trainer.run()


class Progress:
    """Stage lines with an ETA for a :class:`~rspo.core.trainer.Trainer` (see the module docstring).

    ``with Progress(trainer, est, write): trainer.run()``; ``every``: the longest silence in seconds
    (default :data:`EVERY`)."""

    def __init__(self, trainer, est: Estimate, write=print, every: float | None = None):
        self.trainer, self.est, self.write = trainer, est, write
        self.every = EVERY if every is None else every
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.stage = ""  # what runs now ("" between stages)
        self.stage_t0 = self.last = self.iter_t0 = time.perf_counter()
        self.eval_spent = 0.0  # seconds of evaluation inside the current iteration
        self.train_times: list[float] = []  # measured iterations without their evaluation
        self.eval_times: list[float] = []
        self.evals_left = est.evaluations
        self.originals: dict = {}

    # the trainer's methods, wrapped on the instance
    def __enter__(self):
        from rspo.core.streams import STREAM_EXPLORER as explorer_stream

        t = self.trainer

        def wrap(obj, name, before, after=None):
            fn = getattr(obj, name)
            self.originals[(obj, name)] = fn

            def wrapped(*args, **kwargs):
                before(*args, **kwargs)
                result = fn(*args, **kwargs)
                if after is not None:
                    after(result, *args, **kwargs)
                return result

            setattr(obj, name, wrapped)

        def rollout_stage(*args, stream=None, **kwargs):
            self.enter("explorer rollout" if stream == explorer_stream else "rollout")

        def rollout_done(result, *args, stream=None, **kwargs):
            if stream == explorer_stream:  # the rest of swap_step: replay scoring, the explorer's update
                self.enter("explorer update")

        wrap(t, "seed_iteration", lambda it: self.start_iteration())
        wrap(t, "rollout", rollout_stage, rollout_done)
        wrap(t, "update", lambda *a, **k: self.enter("update"))
        wrap(t, "evaluate", lambda: self.enter("evaluation"), lambda out: self.evaluated(out))
        wrap(t.log, "write", lambda row: None, lambda _, row: self.logged(row))
        self.thread = threading.Thread(target=self.beat, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        for (obj, name), _fn in self.originals.items():
            delattr(obj, name)  # the class's method again
        return False

    # events
    def say(self, text: str) -> None:
        with self.lock:
            self.write(text)
            self.last = time.perf_counter()

    def enter(self, stage: str) -> None:
        with self.lock:
            self.stage, self.stage_t0 = stage, time.perf_counter()

    def start_iteration(self) -> None:
        with self.lock:
            self.iter_t0, self.eval_spent = time.perf_counter(), 0.0

    def evaluated(self, out: dict) -> None:
        seconds = out.get("time/eval", time.perf_counter() - self.stage_t0)
        with self.lock:
            self.eval_times.append(seconds)
            self.eval_spent += seconds
            self.evals_left = max(0, self.evals_left - 1)
            self.stage = ""
        if self.trainer.iteration == 0:
            self.say(f"evaluation before training: success {out['eval/success']:.3f} in {duration(seconds)}")

    def logged(self, row: dict) -> None:
        if row.get("iteration", 0) == 0:
            return
        with self.lock:
            self.train_times.append(row.get("time/iteration", 0.0) - self.eval_spent)
            self.stage = ""
        parts = [f"rollout success {row['rollout/success']:.2f}"]
        if "explorer/success" in row:
            parts.append(f"explorer {row['explorer/success']:.2f}")
        if "eval/success" in row:
            parts.append(f"eval success {row['eval/success']:.3f}")
        stages = [
            f"{name} {duration(row[key])}"
            for name, key in (
                ("rollout", "time/rollout"),
                ("explorer", "time/explorer_rollout"),
                ("explorer update", "time/explorer_update"),
                ("update", "time/update"),
                ("evaluation", "time/eval"),
            )
            if key in row
        ]
        self.say(
            f"iteration {row['iteration']}/{self.trainer.cfg.iterations} in "
            f"{duration(row.get('time/iteration', 0.0))} ({', '.join(stages)}): {', '.join(parts)}"
            f" | ETA {duration(self.eta())}"
        )

    # the estimate of what is left
    def eta(self) -> float:
        """Seconds left: iterations not finished x an iteration + evaluations left x an evaluation,
        less what the current iteration and evaluation already took."""
        now = time.perf_counter()
        per_iter = sum(self.train_times) / len(self.train_times) if self.train_times else self.est.iteration_s
        per_eval = sum(self.eval_times) / len(self.eval_times) if self.eval_times else self.est.eval_s
        t = self.trainer
        left = (t.cfg.iterations - t.iteration) * per_iter + self.evals_left * per_eval
        if self.stage == "evaluation":
            left -= min(now - self.stage_t0, per_eval)
        elif self.stage and t.iteration < t.cfg.iterations:  # inside an iteration's training part
            left -= min(now - self.iter_t0 - self.eval_spent, per_iter)
        return max(left, 0.0)

    def beat(self) -> None:
        while not self.stop.wait(TICK):
            with self.lock:
                quiet = time.perf_counter() - self.last >= self.every
                stage, since = self.stage, time.perf_counter() - self.stage_t0
            if quiet and stage:
                t = self.trainer
                if stage != "evaluation":
                    so_far = duration(time.perf_counter() - self.iter_t0)
                    where = f"iteration {t.iteration + 1}/{t.cfg.iterations}, {so_far} in"
                else:
                    where = f"after iteration {t.iteration}" if t.iteration else "before training"
                self.say(f"  {where}: {stage} for {duration(since)} | ETA {duration(self.eta())}")
