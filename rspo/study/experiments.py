"""Experiments: the runs a profile names (:mod:`rspo.core.profiles`), and training them.

- :func:`run_config`, :func:`grid_configs`, :func:`ablation_configs`: the runs of a profile;
- :func:`ensure_run`, :func:`gather_runs`, :func:`train_runs`: a run finished - loaded, resumed or
  trained - and many of them, several at a time, with progress in the terminal.

Results - loading finished runs, statistics and tables - are :mod:`rspo.study.analysis` and
:mod:`rspo.study.claims`, below training: they never import the trainer.
"""

from __future__ import annotations

from pathlib import Path

from rspo.core.atomic import atomic_write_text
from rspo.core.config import TrainConfig
from rspo.core.fingerprint import weights_fingerprint
from rspo.core.profiles import profile_settings
from rspo.study.analysis import Run, load_run


def run_config(
    profile: str, env: str, algo: str, reward: str, seed: int, out_dir, **overrides
) -> TrainConfig:
    """The TrainConfig of one run at a profile's scale; evaluation before the first and after the last
    iteration; ``overrides`` last (ablations, sweeps)."""
    settings = {**profile_settings(profile, env, reward), **overrides}
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
EVAL_KEYS_IF_SET = ("task_pool", "env_options")


def probe_config(cfg: TrainConfig) -> TrainConfig:
    """The config :func:`initial_eval` evaluates the starting policy under: ``cfg``'s settings as an
    outcome run of GRPO (the RSPO-only fields back to their defaults, which an outcome run requires)."""
    rspo_only = {"swap_budget": TrainConfig.swap_budget, "swap_variant": TrainConfig.swap_variant}
    return TrainConfig(
        **{**cfg.to_dict(), **rspo_only, "algo": "grpo", "reward": "outcome", "name": "initial-eval"}
    )


def initial_eval(cfg: TrainConfig) -> dict:
    """The starting policy's greedy evaluation under ``cfg``'s evaluation settings, computed once per
    ``out_dir`` and cached in ``<out_dir>/initial-<env>.json``: every run of a grid starts from the same
    policy (the warm start; LoRA adapters start as the identity), so they share it."""
    import json

    from rspo.core.trainer import Trainer, load_policy, resolve_device

    probe = probe_config(cfg)
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
    atomic_write_text(path, json.dumps(saved + [{"key": key, "eval": result}], indent=1) + "\n")
    return result


def finished_run(cfg: TrainConfig) -> Run | None:
    """The run ``cfg`` names if ``cfg.run_dir`` holds it finished, else None (no run there, or one cut
    short); never trains nor writes. A run there with a different config is an error, as in
    :func:`ensure_run`."""
    from rspo.core.checkpoint import check_same_run

    if not (cfg.run_dir / "config.json").exists():
        return None
    run = load_run(cfg.run_dir)
    check_same_run(run.config, cfg, cfg.run_dir)
    if run.finished and run.config.iterations == cfg.iterations:
        return run
    if run.finished and run.config.iterations > cfg.iterations:
        # a run continued past cfg's length (the lab's baselines, for equal steps): its first
        # cfg.iterations rows are cfg's run; it is read as that, never resumed backwards or rewritten
        rows = [r for r in run.rows if r.get("iteration", 0) <= cfg.iterations]
        if rows[-1].get("iteration") == cfg.iterations and "eval/success" in rows[-1]:
            return Run(run.path, cfg, rows)
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

    from rspo.core.trainer import Trainer

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


def _label(cfg: TrainConfig) -> str:
    """``folder/name``: grids that train the same run name in several folders (the settings of a scan)
    stay apart in the terminal."""
    return f"{Path(cfg.out_dir).name}/{cfg.name}"


def _progress(cfg: TrainConfig) -> str:
    """``folder/name (iteration i/N)`` from the rows a running run has written so far."""
    path = cfg.run_dir / "metrics.jsonl"
    rows = path.read_text().count("\n") if path.exists() else 0
    return f"{_label(cfg)} (iteration {max(rows - 1, 0)}/{cfg.iterations})"


def training_order(configs) -> list[TrainConfig]:
    """``configs`` in the order the workers take them: seed by seed as given, and within a seed the RSPO
    runs first, since they train two policies (an explorer and a learner; in the default form they
    also sample twice a baseline's environment steps): started last, one would train alone while the
    other worker idles (the quick profile's last RSPO run did for 229 of its 615 s, in 2026-12)."""
    seeds = list(dict.fromkeys(cfg.seed for cfg in configs))
    return sorted(configs, key=lambda cfg: (seeds.index(cfg.seed), cfg.reward != "rspo"))


def train_runs(configs, workers: int = 2, write=print, every: float = 20.0) -> None:
    """Train the unfinished runs among ``configs``, ``workers`` at a time in worker processes (each
    run uses its ``threads``; the lab's and the cpu profile's runs use one). The shared initial
    evaluation is made here first, so the workers do not race to write it. ``write`` gets one line per
    finished run, and every ``every`` seconds one line with the running runs' iterations: a terminal
    is never silent for long. A worker's error is raised with the run's name."""
    import multiprocessing
    import time
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    todo = training_order([cfg for cfg in configs if finished_run(cfg) is None])
    if not todo:
        return
    if workers <= 1 or len(todo) == 1:
        import threading

        for k, cfg in enumerate(todo, 1):
            write(f"[{k}/{len(todo)}] training {_label(cfg)} ...")
            t0, stop = time.perf_counter(), threading.Event()

            def beat(cfg=cfg, t0=t0, stop=stop):  # a line every `every` s: a run takes minutes
                while not stop.wait(every):
                    write(f"  {time.perf_counter() - t0:.0f} s: running {_progress(cfg)}")

            thread = threading.Thread(target=beat, daemon=True)
            thread.start()
            try:
                run = ensure_run(cfg)
            finally:
                stop.set()
                thread.join()
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
        f"{_label(run.config):40s} eval success {100 * first['eval/success']:5.1f}% -> "
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
