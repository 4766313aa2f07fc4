"""Experiments: the training profiles, the grids of runs they name, and training them.

One place for what a profile is (docs/design.md §9):

- :data:`TRAIN_PROFILES`: the training scale of each profile (``quick``, ``cpu``, ``gpu``, ``lab``,
  ``smoke``), per environment, on top of :class:`rspo.config.TrainConfig`'s defaults;
- :data:`PROFILES`: what ``rspo reproduce`` injects into each notebook for a profile, with
  :data:`PROFILE_NOTES`, :data:`SHARED_RUNS` and :data:`TRAIN_WORKERS`;
- :func:`run_config`, :func:`grid_configs`, :func:`ablation_configs`: the runs of a profile;
- :func:`ensure_run`, :func:`gather_runs`, :func:`train_runs`: a run finished - loaded, resumed or
  trained - and many of them, several at a time, with progress in the terminal.

Results - loading finished runs, statistics and tables - are :mod:`rspo.analysis` and
:mod:`rspo.claims`, below training: they never import the trainer.
"""

from __future__ import annotations

from pathlib import Path

from rspo.analysis import Run, load_run
from rspo.atomic import atomic_write_text
from rspo.config import TrainConfig
from rspo.envs.registry import ENVS, LAB
from rspo.fingerprint import weights_fingerprint

ROOT = Path(__file__).resolve().parents[1]

# training scales shared by the notebooks (``rspo reproduce``) and ``benchmarks/bench_learning.py``:
# per profile, settings for every environment ("common") on top of TrainConfig's, and each
# environment's own on top of those - from its registry entry (rspo.envs.registry, EnvSpec.profiles)
PROFILE_COMMON: dict[str, dict] = {
    # the whole story at small scale (make reproduce): the lab at study 2's chosen setting
    # (rspo.envs.registry.QUICK_LAB), where outcome is slow and dense is biased; household and shop at
    # toy scale for the notebooks' env parameter
    "quick": dict(iterations=4, tasks_per_iter=4, group_size=2, no_signal="skip", threads=1),
    # the CPU table: at most 15 minutes per run on a 2-core machine, two runs at a time. Sized by the
    # slowest combination, PPO + RSPO in household (two policies, PPO trains every turn): no KL term
    # (kl_coef 0, as DAPO and Dr. GRPO drop it; the other profiles keep 0.01), 4 replayed groups per
    # RSPO update, household horizon 20 and 8 iterations. docs/results.md "Does every method learn?"
    # has the measurements behind these choices and the previous profile's results.
    "cpu": dict(tasks_per_iter=8, group_size=4, no_signal="skip", threads=1, kl_coef=0.0, replay_groups=4),
    # one GPU, a 0.5-1.5B instruct model with LoRA in generate mode (GiGPO's scale, fewer iterations)
    "gpu": dict(
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
    # the credit-assignment lab (LAB, the detour entry's); m from --set misalignment=...
    "lab": LAB,
    # seconds: for testing the scripts that run profiles
    "smoke": dict(iterations=2, tasks_per_iter=2, group_size=2, no_signal="skip", threads=1),
}


def train_profiles() -> dict[str, dict[str, dict]]:
    """Per profile, ``{"common": settings, <env>: settings}`` for every registered environment that
    names the profile in its entry (``EnvSpec.profiles``)."""
    return {
        profile: {
            "common": common,
            **{env: spec.profiles[profile] for env, spec in ENVS.items() if profile in spec.profiles},
        }
        for profile, common in PROFILE_COMMON.items()
    }


TRAIN_PROFILES: dict[str, dict[str, dict]] = train_profiles()


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


def profile_settings(profile: str, env: str, reward: str) -> dict:
    """A profile's TrainConfig settings for ``env`` and ``reward``: the profile's common ones, then the
    environment's (its registry entry), then those of the reward mode (``by_reward``)."""
    if profile not in PROFILE_COMMON:
        raise ValueError(f"unknown profile {profile!r}; choose one of: {', '.join(PROFILE_COMMON)}")
    spec = ENVS.get(env)  # an unknown env: TrainConfig names the choices
    base = {**PROFILE_COMMON[profile], **(spec.profiles.get(profile, {}) if spec else {})}
    by_reward = base.pop("by_reward", {})  # settings of one reward mode only (e.g. RSPO's swap_budget)
    return {**base, **by_reward.get(reward, {})}


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


# per profile: parameters for every notebook ("*") and per notebook stem; a notebook gets only the
# parameters its parameters cell declares. "profile" names the training scale (TRAIN_PROFILES above).
BASE_ALGOS = ["grpo", "ppo", "gigpo"]
SWAP_VARIANTS = [{"swap_variant": "mixed"}, {"swap_variant": "schedule"}]
CPU_ABLATIONS = SWAP_VARIANTS + [
    {"swap_lambda": 0.5},
    {"swap_lambda": 2.0},
    {"swap_c": 2.0},
]
# the lab's ablation rows (docs/lab/protocol.md, "Ablations"): the same list, on GRPO at m = 0.1
LAB_ABLATIONS = CPU_ABLATIONS
PROFILES: dict[str, dict[str, dict]] = {
    # the lab (detour) at study 2's chosen setting on GRPO, two seeds: outcome slow, dense biased,
    # where RSPO ends
    "quick": {
        "*": {
            "profile": "quick",
            "interactive": False,
            "envs": ["detour"],
            "algos": ["grpo"],
            "seeds": [0, 1],
            "ablations": [],
        },
        "00_quickstart": {"env_name": "detour"},
        "06_gpu_colab": {"env_name": "detour"},
    },
    "cpu": {
        "*": {
            "profile": "cpu",
            "interactive": False,
            "envs": ["household", "shop"],
            "algos": BASE_ALGOS,
            "seeds": [0, 1, 2],
        },
        "00_quickstart": {"env_name": "shop"},
        "01_environments_and_rewards": {"episodes_per_env": 200},
        "05_analysis": {"ablations": CPU_ABLATIONS},
    },
}
# training runs at a time when rspo reproduce trains a profile's table before its notebooks (each run
# uses one thread in these profiles; the gpu profile trains one run at a time)
TRAIN_WORKERS = {"quick": 2, "smoke": 2, "cpu": 2}
# the gpu profile: the cpu profile's notebooks and table on a GPU, with the two swap variants as ablations
PROFILES["gpu"] = {nb: dict(values) for nb, values in PROFILES["cpu"].items()}
PROFILES["gpu"]["*"]["profile"] = "gpu"
PROFILES["gpu"]["05_analysis"] = {"ablations": SWAP_VARIANTS}
# the quick profile's notebooks at the smoke training scale (2 iterations), with two ablations so that
# notebook 05's ablation path runs too: the pipeline in about 3 minutes, for the test suite
PROFILES["smoke"] = {nb: dict(values) for nb, values in PROFILES["quick"].items()}
PROFILES["smoke"]["*"].update(profile="smoke", exercises="solutions")  # every exercise's check must pass
PROFILES["smoke"]["05_analysis"] = {"ablations": SWAP_VARIANTS}
# one task of notebook 01's real-engine section where the alfworld extra is installed (20-35 s for 3)
PROFILES["smoke"]["01_environments_and_rewards"] = {"alfworld_tasks": 1}
# where a profile's training runs live: the cpu profile shares benchmarks/bench_learning.py's runs
SHARED_RUNS = {"cpu": ROOT / "runs" / "bench-learning" / "cpu"}
# the notebook that reads every run of a profile's table (its envs x algos x seeds: table_parameters)
TABLE_NOTEBOOK = "05_analysis"
PROFILE_NOTES = {
    "quick": "the credit-assignment lab at study 2's chosen setting (detour, 7 rooms, m = 0.15) on GRPO, "
    "two seeds: outcome slow, dense biased, where RSPO ends",
    "smoke": "the quick profile's notebooks at 2 training iterations: a check of the pipeline, no result "
    "(the test suite runs it)",
    "cpu": "the full CPU table, 3 seeds, resumable run by run (at most 6 hours of a 2-core machine)",
    "gpu": "one 24-80 GB GPU with a 0.5-1.5B instruct model",
}


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

    from rspo.trainer import Trainer, load_policy, resolve_device

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
    from rspo.checkpoint import check_same_run

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
