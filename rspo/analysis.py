"""Load training runs, summarise each, aggregate across seeds: the results table (docs/design.md §9).

A run is a folder ``runs/<name>/`` with ``config.json`` and ``metrics.jsonl`` (:mod:`rspo.trainer`).
:func:`load_runs` reads every run under a folder; :func:`summarise` gives one row per run (initial
and final greedy evaluation, environment steps, wall minutes); :func:`aggregate` groups rows that
differ only in the seed and reports mean, standard deviation and a 95% confidence interval;
:func:`to_markdown` prints any of these tables. Used by ``benchmarks/bench_learning.py`` and the
notebooks.

Usage::

    from rspo.analysis import aggregate, load_runs, summarise, to_markdown
    table = aggregate(summarise(load_runs("runs/bench-learning/cpu")))
    print(to_markdown(table))
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from rspo.config import TrainConfig
from rspo.metrics import MetricsLog

KEYS = ("env", "algo", "reward")

# the credit-assignment lab's settings (issue 17, docs/lab/protocol.md): detour only; 8 tasks x 4
# copies (a group of 8 let the outcome learner find its first successes at once: docs/lab/README.md),
# lr 1e-3 (the tiny model from a uniform-play warm start), evaluation every 6 iterations for the curves
LAB = dict(
    iterations=30,
    tasks_per_iter=8,
    group_size=4,
    lr=1e-3,
    kl_coef=0.0,
    micro_batch=64,
    no_signal="skip",
    threads=1,
    eval_every=6,
    eval_tasks=64,
)
# training scales shared by the notebooks (``rspo reproduce``) and ``benchmarks/bench_learning.py``:
# per profile, settings for every environment ("common") and per environment, on top of TrainConfig's
TRAIN_PROFILES: dict[str, dict[str, dict]] = {
    # the whole story at small scale (make reproduce): the lab at the protocol's settings and its
    # misaligned m = 0.1 (docs/lab/protocol.md), where dense first finds successes faster and then
    # drifts to farming; household and shop at toy scale for the notebooks' env parameter
    "quick": {
        "common": dict(iterations=4, tasks_per_iter=4, group_size=2, no_signal="skip", threads=1),
        "household": dict(max_steps=20, eval_tasks=32),
        "shop": dict(eval_tasks=32),
        "detour": dict(LAB, misalignment=0.1),
    },
    # the CPU table: at most 15 minutes per run on a 2-core machine, two runs at a time. Sized by the
    # slowest combination, PPO + RSPO in household (two policies, PPO trains every turn): no KL term
    # (kl_coef 0, as DAPO and Dr. GRPO drop it; the other profiles keep 0.01), 4 replayed groups per
    # RSPO update, household horizon 20 (the warm start's success: 10.2% against 10.9% at 30; the
    # expert needs 9 steps on average, at most 20 on valid_seen) and 8 iterations. docs/results.md "Does every
    # method learn?" has the measurements behind these choices and the previous profile's results.
    "cpu": {
        "common": dict(
            tasks_per_iter=8, group_size=4, no_signal="skip", threads=1, kl_coef=0.0, replay_groups=4
        ),
        "household": dict(iterations=8, max_steps=20, eval_tasks=64),
        "shop": dict(iterations=24, eval_tasks=128),
    },
    # one GPU, a 0.5-1.5B instruct model with LoRA in generate mode (GiGPO's scale, fewer iterations)
    "gpu": {
        "common": dict(
            model="Qwen/Qwen2.5-1.5B-Instruct",
            lora=True,
            action_mode="generate",
            tasks_per_iter=16,
            group_size=8,
            iterations=60,
            lr=1e-5,
            micro_batch=8,
            minibatch_turns=128,
        ),
        "household": dict(eval_tasks=128),
        "shop": dict(eval_tasks=128),
    },
    # the credit-assignment lab (LAB above); m from --set misalignment=...
    "lab": {"common": LAB, "detour": dict()},
    # seconds: for testing the scripts that run profiles
    "smoke": {
        "common": dict(iterations=2, tasks_per_iter=2, group_size=2, no_signal="skip", threads=1),
        "household": dict(max_steps=6, eval_tasks=4),
        "shop": dict(max_steps=4, eval_tasks=4),
        "detour": dict(eval_tasks=8),
    },
}


def run_config(
    profile: str, env: str, algo: str, reward: str, seed: int, out_dir, **overrides
) -> TrainConfig:
    """The TrainConfig of one run at a profile's scale; evaluation before the first and after the last
    iteration; ``overrides`` last (ablations, sweeps)."""
    if profile not in TRAIN_PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of: {', '.join(TRAIN_PROFILES)}")
    p = TRAIN_PROFILES[profile]
    settings = {**p["common"], **p.get(env, {}), **overrides}
    iterations = settings.get("iterations", TrainConfig.iterations)
    settings.setdefault("eval_every", iterations)
    settings.setdefault("checkpoint_every", max(1, iterations // 8))
    settings.setdefault("progress", False)
    return TrainConfig(env=env, algo=algo, reward=reward, seed=seed, out_dir=str(out_dir), **settings)


def grid_configs(profile: str, out_dir, envs, algos, rewards, seeds, **overrides) -> list[TrainConfig]:
    """The TrainConfigs of a grid of runs (:func:`run_config`), seed-major: every env x algo x reward
    of the first seed, then of the next, so that a grid cut short has whole seeds."""
    return [
        run_config(profile, env, algo, reward, seed, out_dir, **overrides)
        for seed in seeds
        for env in envs
        for algo in algos
        for reward in rewards
    ]


def ablation_configs(profile: str, out_dir, envs, ablations, seeds, **overrides) -> list[TrainConfig]:
    """RSPO on GRPO with one setting changed per run (``ablations``: dicts of TrainConfig fields), named
    by the change: ``<env>-grpo-rspo-<key>=<value>-s<seed>`` (notebook 05 and the cpu profile)."""
    return [
        run_config(
            profile,
            env,
            "grpo",
            "rspo",
            seed,
            out_dir,
            name=f"{env}-grpo-rspo-{'-'.join(f'{k}={v}' for k, v in extra.items())}-s{seed}",
            **{**overrides, **extra},
        )
        for seed in seeds
        for env in envs
        for extra in ablations
    ]


# two-sided 95% Student t quantiles by degrees of freedom (n - 1); normal beyond the table
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


@dataclass
class Run:
    """One training run: its config and its metrics rows (``rows[0]`` is the initial evaluation)."""

    path: Path
    config: TrainConfig
    rows: list[dict]

    @property
    def finished(self) -> bool:
        last = self.rows[-1] if self.rows else {}
        return last.get("iteration") == self.config.iterations and "eval/success" in last

    def curve(self, key: str = "eval/success") -> list[tuple[int, int, float]]:
        """``(iteration, env_steps, value)`` of every row that has ``key``."""
        return [(r["iteration"], r.get("rollout/env_steps", 0), r[key]) for r in self.rows if key in r]


def load_run(path: str | Path) -> Run:
    path = Path(path)
    config = TrainConfig.load(path / "config.json")
    return Run(path, config, MetricsLog(path / "metrics.jsonl").read())


def load_runs(root: str | Path, finished_only: bool = True) -> list[Run]:
    """Every run in the folders under ``root`` (only finished ones unless told otherwise)."""
    runs = [load_run(p.parent) for p in sorted(Path(root).glob("*/metrics.jsonl"))]
    return [r for r in runs if r.finished or not finished_only]


RUN_LOGS = ("config.json", "metrics.jsonl")  # what a finished run is read from; checkpoints aside


def archive_runs(runs_dir: str | Path, dest: str | Path) -> list[str]:
    """Copy the logs of every finished run under ``runs_dir`` (:data:`RUN_LOGS`, a few kB each; no
    checkpoints) and its cached initial evaluations (``initial-<env>.json``) into ``dest``, replacing
    what ``dest`` held: the data behind a published report, kept with it in git, from which
    :func:`restore_runs` rebuilds the runs folder on another machine. Returns the names archived."""
    import shutil

    runs_dir, dest = Path(runs_dir), Path(dest)
    runs = load_runs(runs_dir) if runs_dir.is_dir() else []
    if dest.is_dir():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for run in runs:
        (dest / run.path.name).mkdir()
        for name in RUN_LOGS:
            shutil.copy2(run.path / name, dest / run.path.name / name)
    for cached in sorted(runs_dir.glob("initial-*.json")):
        shutil.copy2(cached, dest / cached.name)
    return [run.path.name for run in runs]


def restore_runs(archive: str | Path, runs_dir: str | Path) -> list[str]:
    """Put the runs :func:`archive_runs` wrote into ``archive`` back under ``runs_dir``, each where
    ``runs_dir`` has no folder of that name (a run there, finished or not, is left alone), with its
    config's ``out_dir`` set to ``runs_dir``; likewise a missing ``initial-<env>.json``. The restored
    runs count as finished (``bench_learning`` and ``rspo reproduce`` reuse them; nothing resumes
    them: they have no checkpoint). Returns the names restored."""
    import shutil

    archive, runs_dir = Path(archive), Path(runs_dir)
    if not archive.is_dir():
        raise FileNotFoundError(f"no run archive at {archive} (written by `rspo reproduce --publish`)")
    runs_dir.mkdir(parents=True, exist_ok=True)
    restored = []
    for saved in sorted(archive.glob("*/config.json")):
        target = runs_dir / saved.parent.name
        if target.exists():
            continue
        target.mkdir()
        cfg = TrainConfig.load(saved)
        cfg.out_dir = str(runs_dir)
        cfg.save(target / "config.json")
        shutil.copy2(saved.parent / "metrics.jsonl", target / "metrics.jsonl")
        restored.append(target.name)
    for cached in sorted(archive.glob("initial-*.json")):
        if not (runs_dir / cached.name).exists():
            shutil.copy2(cached, runs_dir / cached.name)
    return restored


EVAL_KEYS = (
    "env",
    "model",
    "gguf_file",
    "action_mode",
    "eval_tasks",
    "max_steps",
    "history",
    "show_admissible",
    "misalignment",
    "max_prompt_tokens",
    "max_new_tokens",
)
# fields added to the evaluation after caches were written: in the key only when set, so that the
# entries cached without them (their default) still hit
EVAL_KEYS_IF_SET = ("task_pool",)


def weights_fingerprint(policy) -> str:
    """12 hex digits of a SHA-256 over the policy's weights (names and bytes, in name order): which
    starting policy an evaluation belongs to. LoRA adapter weights are left out: they start as the
    identity (B = 0) whatever the seed draws for A, so every seed starts from the same policy."""
    import hashlib

    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(policy.model.state_dict().items()):
        if "lora_" in name:
            continue
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().flatten().view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:12]


def mixed_starts(runs: list[Run]) -> list[str]:
    """One line per environment whose ``runs`` began from different initial evaluations (success of
    ``rows[0]``): runs trained on different machines can start from differently built warm starts,
    and then their final successes compare less well than their changes. Empty when all agree."""
    seen: dict[str, set[float]] = {}
    for run in runs:
        if run.rows and "eval/success" in run.rows[0]:
            seen.setdefault(run.config.env, set()).add(round(100 * run.rows[0]["eval/success"], 1))
    return [
        f"note: the {env} runs started from {len(values)} different initial evaluations "
        f"({', '.join(f'{v:.1f}%' for v in sorted(values))} success): warm starts built on different "
        "machines; compare their changes rather than their final successes"
        for env, values in sorted(seen.items())
        if len(values) > 1
    ]


def initial_eval(cfg: TrainConfig) -> dict:
    """The starting policy's greedy evaluation under ``cfg``'s evaluation settings, computed once per
    ``out_dir`` and cached in ``<out_dir>/initial-<env>.json``: every run of a grid starts from the same
    policy (the warm start; LoRA adapters start as the identity), so they share it."""
    import json

    from rspo.trainer import Trainer, load_policy, resolve_device

    probe = TrainConfig(**{**cfg.to_dict(), "algo": "grpo", "reward": "outcome", "name": "initial-eval"})
    policy = load_policy(probe, resolve_device(probe)[0])  # only the policy: a cache hit needs no trainer
    # the weights are part of the key: another machine can build the "same" warm start with other
    # floats (10.2% vs 7.8% household success have been seen), and a restored cache must not stand in
    # for the evaluation of the policy this machine's runs start from
    key = {k: getattr(cfg, k) for k in EVAL_KEYS} | {"weights": weights_fingerprint(policy)}
    key |= {k: getattr(cfg, k) for k in EVAL_KEYS_IF_SET if getattr(cfg, k)}
    path = Path(cfg.out_dir) / f"initial-{cfg.env}.json"
    saved = json.loads(path.read_text()) if path.exists() else []
    saved = [saved] if isinstance(saved, dict) else saved  # one entry, as an older version wrote it
    for entry in saved:
        if entry["key"] == key and "time/cpu_eval" in entry["eval"]:
            return entry["eval"]
    # not cached, or cached by a kit version that did not log CPU time: evaluate (greedy: same numbers)
    saved = [entry for entry in saved if entry["key"] != key]
    result = Trainer(probe, policy=policy).evaluate()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(saved + [{"key": key, "eval": result}], indent=1) + "\n")
    return result


def finished_run(cfg: TrainConfig) -> Run | None:
    """The run ``cfg`` names if ``cfg.run_dir`` holds it finished, else None (no run there, or one cut
    short); never trains nor writes. A run there with a different config is an error, as in
    :func:`ensure_run`."""
    from rspo.checkpoint import check_same_run

    if not (cfg.run_dir / "config.json").exists():
        return None
    run = load_run(cfg.run_dir)
    check_same_run(run.config, cfg, cfg.run_dir)
    if run.finished and run.config.iterations == cfg.iterations:
        return run
    return None


def ensure_run(
    cfg: TrainConfig, policy=None, share_initial_eval: bool = True, train: bool = True
) -> Run | None:
    """The run ``cfg`` names, finished: loaded if it already is, resumed if it was cut short, else
    trained - starting from the shared initial evaluation (:func:`initial_eval`) unless ``policy`` is
    given or ``share_initial_eval`` is False. Notebooks and benchmarks call this, so rerunning them
    reuses finished runs. With ``train`` False nothing is trained or written: the finished run, or
    None for a missing or unfinished one (:func:`finished_run`)."""
    from dataclasses import replace

    from rspo.trainer import Trainer

    if not train:
        return finished_run(cfg)
    first = None
    if (cfg.run_dir / "config.json").exists():
        run = finished_run(cfg)
        if run is not None:
            return run
        cfg = replace(cfg, resume=True)
    elif share_initial_eval and policy is None and cfg.eval_every:
        first = initial_eval(cfg)
    Trainer(cfg, policy=policy, initial_eval=first).run()
    return load_run(cfg.run_dir)


def _train_run(data: dict) -> str:
    """:func:`ensure_run` in a worker process (:func:`train_runs`): the config as a plain dict."""
    cfg = TrainConfig.from_dict(data)
    ensure_run(cfg)
    return cfg.name


def _progress(cfg: TrainConfig) -> str:
    """``name (iteration i/N)`` from the rows a running run has written so far."""
    path = cfg.run_dir / "metrics.jsonl"
    rows = path.read_text().count("\n") if path.exists() else 0
    return f"{cfg.name} (iteration {max(rows - 1, 0)}/{cfg.iterations})"


def train_runs(configs, workers: int = 2, write=print, every: float = 20.0) -> None:
    """Train the unfinished runs among ``configs``, ``workers`` at a time in worker processes (each
    run uses its ``threads``; the lab's and the cpu profile's runs use one). The shared initial
    evaluation is made here first, so the workers do not race to write it. ``write`` gets one line per
    finished run, and every ``every`` seconds one line with the running runs' iterations: a terminal
    is never silent for long. A worker's error is raised with the run's name."""
    import multiprocessing
    import time
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    todo = [cfg for cfg in configs if finished_run(cfg) is None]
    if not todo:
        return
    if workers <= 1 or len(todo) == 1:
        for k, cfg in enumerate(todo, 1):
            write(f"[{k}/{len(todo)}] training {cfg.name} ...")
            t0 = time.perf_counter()
            run = ensure_run(cfg)
            write(f"[{k}/{len(todo)}] {_finished_line(run)} in {time.perf_counter() - t0:.0f} s")
        return
    for cfg in {(c.out_dir, c.env): c for c in todo if not (c.run_dir / "config.json").exists()}.values():
        if cfg.eval_every:
            initial_eval(cfg)
    write(f"training {len(todo)} runs, {workers} at a time (one line per finished run) ...")
    t0 = time.perf_counter()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        running = {pool.submit(_train_run, cfg.to_dict()): cfg for cfg in todo}
        done_count = 0
        while running:
            finished, _ = wait(running, timeout=every, return_when=FIRST_COMPLETED)
            for future in finished:
                cfg = running.pop(future)
                try:
                    future.result()
                except Exception as err:
                    raise RuntimeError(f"training {cfg.name} failed: {type(err).__name__}: {err}") from err
                done_count += 1
                run = load_run(cfg.run_dir)
                write(
                    f"[{done_count}/{len(todo)}] {_finished_line(run)} ({time.perf_counter() - t0:.0f} s so far)"
                )
            if not finished:
                started = [cfg for cfg in running.values() if (cfg.run_dir / "metrics.jsonl").exists()]
                write(
                    f"  {time.perf_counter() - t0:.0f} s: {done_count}/{len(todo)} finished; running "
                    + (", ".join(_progress(cfg) for cfg in started) or "(starting)")
                )
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _finished_line(run: Run) -> str:
    first, last = run.rows[0], run.rows[-1]
    return (
        f"{run.config.name:32s} eval success {100 * first['eval/success']:5.1f}% -> "
        f"{100 * last['eval/success']:5.1f}%"
    )


def gather_runs(
    configs, train: bool = True, verbose: bool = False, workers: int = 1
) -> tuple[list[Run], list[str]]:
    """:func:`ensure_run` on each of ``configs`` in order: the finished runs, and the names of the
    missing ones (those not finished, with ``train`` False). ``verbose``: one line per run.
    ``workers`` > 1: the unfinished runs are first trained that many at a time (:func:`train_runs`)."""
    if train and workers > 1:
        train_runs(configs, workers)
    runs, missing = [], []
    for cfg in configs:
        run = ensure_run(cfg, train=train)  # None: not finished, and not trained
        if run is None:
            missing.append(cfg.name)
            continue
        runs.append(run)
        if verbose:
            print(_finished_line(run), flush=True)
    return runs, missing


def summarise(runs: list[Run], split: str = "") -> list[dict]:
    """One row per run: env, algo, reward, seed, initial/final success (%) and score, steps, minutes.

    ``split``: success and score on one evaluation split (``eval/<split>/*``: ``valid_unseen``, or
    ``pool``, the training tasks of a ``task_pool`` run) instead of all of them (``eval/*``); runs that
    did not evaluate on it are left out."""
    prefix = f"eval/{split}/" if split else "eval/"
    out = []
    for run in runs:
        if not run.rows or f"{prefix}success" not in run.rows[0]:
            continue
        first, last = run.rows[0], run.rows[-1]
        wall = first.get("time/eval", 0.0) + sum(r.get("time/iteration", 0.0) for r in run.rows[1:])
        # CPU seconds, where every row logged them (runs of older versions did not: nan)
        cpu_rows = [first.get("time/cpu_eval")] + [r.get("time/cpu_iteration") for r in run.rows[1:]]
        cpu = math.nan if None in cpu_rows else sum(cpu_rows)
        cfg = run.config
        row = {k: getattr(cfg, k) for k in KEYS}
        row["reward"] = method_name(cfg)
        row.update(
            seed=cfg.seed,
            initial=100 * first[f"{prefix}success"],
            final=100 * last.get(f"{prefix}success", math.nan),
            initial_score=first.get(f"{prefix}score", math.nan),
            final_score=last.get(f"{prefix}score", math.nan),
            env_steps=last.get("rollout/env_steps", 0),
            iterations=last.get("iteration", 0),
            minutes=wall / 60,
            cpu_minutes=cpu / 60,
        )
        out.append(row)
    return out


def mean_std_ci(xs: list[float]) -> tuple[float, float, float]:
    """Mean, sample standard deviation and the half-width of a 95% t confidence interval (0 for n = 1);
    nan when there is no value or one is missing (nan)."""
    n = len(xs)
    if n == 0 or any(math.isnan(x) for x in xs):
        return math.nan, math.nan, math.nan
    mean = statistics.fmean(xs)
    if n == 1:
        return mean, 0.0, 0.0
    std = statistics.stdev(xs)
    return mean, std, _T95.get(n - 1, 1.96) * std / math.sqrt(n)


def aggregate(rows: list[dict], keys: tuple[str, ...] = KEYS) -> list[dict]:
    """Rows that share ``keys`` (all but the seed) merged: mean, std and 95% CI of every measure."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    out = []
    for key, members in groups.items():
        agg = dict(zip(keys, key, strict=True))
        agg["seeds"] = len(members)
        for measure in (
            "initial",
            "final",
            "initial_score",
            "final_score",
            "env_steps",
            "minutes",
            "cpu_minutes",
        ):
            mean, std, ci = mean_std_ci([m[measure] for m in members])
            agg[measure], agg[f"{measure}_std"], agg[f"{measure}_ci"] = mean, std, ci
        agg["change"] = agg["final"] - agg["initial"]
        # improves beyond seed noise: the mean gain exceeds the spread of the final success over seeds
        agg["beats_spread"] = None if len(members) < 2 else agg["change"] > agg["final_std"]
        out.append(agg)
    return out


def _pm(row: dict, measure: str, digits: int = 1) -> str:
    if row["seeds"] < 2:
        return f"{row[measure]:.{digits}f}"
    return f"{row[measure]:.{digits}f} ± {row[f'{measure}_std']:.{digits}f}"


def results_table(agg: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Header and text rows of the learning table (what ``bench_learning.py`` prints)."""
    head = ["env", "algo", "reward", "seeds", "initial %", "final %", "change", "beats spread"]
    head += ["score (shop)", "env steps", "minutes/run", "CPU min/run"]
    lines = []
    for row in agg:
        beats = {None: "-", True: "yes", False: "no"}[row["beats_spread"]]
        score = f"{_pm(row, 'initial_score')} -> {_pm(row, 'final_score')}" if row["env"] == "shop" else ""
        lines.append(
            [
                row["env"],
                row["algo"],
                row["reward"],
                str(row["seeds"]),
                _pm(row, "initial"),
                _pm(row, "final"),
            ]
            + [f"{row['change']:+.1f}", beats, score, f"{row['env_steps']:,.0f}", f"{row['minutes']:.1f}"]
            + ["" if math.isnan(row["cpu_minutes"]) else f"{row['cpu_minutes']:.1f}"]
        )
    return head, lines


# what the training rows say about why a method moves or not (``bench_learning.py --diagnose``): the
# learner's rollouts, the process reward it collects (misalignment: farming shows here first), and
# RSPO's explorer and replay
DIAGNOSTICS = {
    "rollout/success": ("rollout success %", 100.0),
    "rollout/process_return": ("process return", 1.0),
    "rollout/episode_len": ("episode len", 1.0),
    "rollout/no_signal_frac": ("no-signal groups %", 100.0),
    "loss/turns": ("turns trained", 1.0),
    "swap/turns": ("of them replayed", 1.0),
    "explorer/success": ("explorer success %", 100.0),
    "explorer/process_return": ("explorer process return", 1.0),
    "explorer/episode_len": ("explorer episode len", 1.0),
    "buffer/age_mean": ("replay age (iters)", 1.0),
    "swap/is_ratio_mean": ("IS ratio", 1.0),
    "swap/truncated_frac": ("truncated %", 100.0),
}


def diagnostics_table(runs: list[Run], keys=DIAGNOSTICS) -> tuple[list[str], list[list[str]]]:
    """Per (env, algo, method): each of ``keys`` averaged over a run's training iterations (the first
    and last half apart, ``first -> last``), then over its seeds; blank where no run logged the key."""
    groups: dict[tuple, list[Run]] = {}
    for run in runs:
        groups.setdefault((run.config.env, run.config.algo, method_name(run.config)), []).append(run)
    head = ["env", "algo", "reward", "seeds"] + [label for label, _ in keys.values()]
    lines = []
    for key, members in groups.items():
        cells = []
        for name, (_, scale) in keys.items():
            halves = []
            for run in members:
                values = [r[name] for r in run.rows[1:] if name in r]
                if values:
                    mid = max(1, len(values) // 2)
                    halves.append((statistics.fmean(values[:mid]), statistics.fmean(values[mid:] or values)))
            if not halves:
                cells.append("")
                continue
            first, last = (scale * statistics.fmean(h[i] for h in halves) for i in (0, 1))
            cells.append(f"{first:.2f} -> {last:.2f}" if scale == 1.0 else f"{first:.1f} -> {last:.1f}")
        lines.append([*key, str(len(members)), *cells])
    return head, lines


def to_markdown(head: list[str], lines: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(out + ["| " + " | ".join(row) + " |" for row in lines])


def to_text(head: list[str], lines: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in lines)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head)] + [fmt.format(*r) for r in lines])


# Reference numbers quoted from the GiGPO paper (arXiv 2505.10978, table 1; Qwen2.5-1.5B-Instruct,
# success % / WebShop score, mean +- std over 3 seeds) - the paper's, not the kit's. The RSPO paper's
# tables are not public.
PAPER_NUMBERS = [
    {
        "source": "GiGPO paper, 1.5B",
        "method": "PPO (critic)",
        "alfworld_all": "54.4 ± 3.1",
        "webshop_score": "73.8 ± 3.0",
        "webshop_success": "51.5 ± 2.9",
    },
    {
        "source": "GiGPO paper, 1.5B",
        "method": "RLOO",
        "alfworld_all": "69.7 ± 2.5",
        "webshop_score": "73.9 ± 5.6",
        "webshop_success": "52.1 ± 6.7",
    },
    {
        "source": "GiGPO paper, 1.5B",
        "method": "GRPO",
        "alfworld_all": "72.8 ± 3.6",
        "webshop_score": "75.8 ± 3.5",
        "webshop_success": "56.8 ± 3.8",
    },
    {
        "source": "GiGPO paper, 1.5B",
        "method": "GiGPO w/ std",
        "alfworld_all": "86.7 ± 1.7",
        "webshop_score": "83.1 ± 1.6",
        "webshop_success": "65.0 ± 3.2",
    },
]


def method_name(cfg: TrainConfig) -> str:
    """``reward`` with RSPO's variant and non-default swap settings, e.g. ``rspo-mixed``, ``rspo λ=0.5``."""
    name = cfg.reward
    if cfg.reward != "rspo":
        return name
    if cfg.swap_variant != "offpolicy":
        name += f"-{cfg.swap_variant}"
    default = TrainConfig()
    if cfg.swap_lambda != default.swap_lambda:
        name += f" λ={cfg.swap_lambda:g}"
    if cfg.swap_c != default.swap_c:
        name += f" c={cfg.swap_c:g}"
    return name


def paper_table(runs: list[Run]) -> tuple[list[str], list[list[str]]]:
    """The paper-style table: rows algo x reward mode, columns per evaluation split (household success
    per split; shop score and success), final greedy evaluation, mean +- std over seeds."""
    cells: dict[tuple[str, str], dict[str, list[float]]] = {}
    columns: list[str] = []
    for run in runs:
        last = run.rows[-1]
        row = cells.setdefault((run.config.algo, method_name(run.config)), {})
        for key, value in last.items():
            parts = key.split("/")
            if len(parts) != 3 or parts[0] != "eval" or parts[2] not in ("success", "score"):
                continue
            if run.config.env == "household" and parts[2] == "score":
                continue  # household's score is its success
            col = f"{run.config.env} {parts[1]} {parts[2]}"
            if col not in columns:
                columns.append(col)
            row.setdefault(col, []).append(value * (100 if parts[2] == "success" else 1))
    columns.sort()
    lines = []
    for (algo, method), row in sorted(cells.items()):
        out = [algo, method]
        for col in columns:
            xs = row.get(col, [])
            if not xs:
                out.append("")
                continue
            mean, std, _ = mean_std_ci(xs)
            out.append(f"{mean:.1f}" + (f" ± {std:.1f}" if len(xs) > 1 else ""))
        lines.append(out)
    return ["algo", "reward"] + columns, lines


def steps_to_level(run: Run, level: float, key: str = "rollout/success", window: int = 3) -> int | None:
    """Environment steps until the moving average (over ``window`` iterations) of ``key`` first reaches
    ``level``; None if it never does (sample efficiency)."""
    rows = [r for r in run.rows[1:] if key in r]
    for i in range(len(rows)):
        recent = rows[max(0, i - window + 1) : i + 1]
        if sum(r[key] for r in recent) / len(recent) >= level:
            return rows[i]["rollout/env_steps"]
    return None
