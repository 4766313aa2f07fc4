"""``rspo reproduce --profile {quick,cpu,gpu}``: run the numbered notebooks, write the report (docs/design.md §9).

Each notebook of the checkout's ``notebooks/`` folder is executed with papermill, in order, with the
profile's parameters injected (:data:`PROFILES`; every notebook also gets ``figures_dir`` and
``runs_dir`` inside the output folder), into ``runs/reproduce-<profile>/``:

- ``NN_topic.ipynb`` executed copies;
- ``figures/`` what the notebooks saved (PNG where static export works, standalone HTML otherwise);
- ``runs/`` the training runs the notebooks made (a finished run is reused when the profile is rerun;
  the ``cpu`` profile shares ``runs/bench-learning/cpu/`` with ``benchmarks/bench_learning.py``);
- ``results.json``: each notebook's key numbers (:mod:`rspo.study.results`);
- ``NN_topic.html`` the executed notebooks rendered by nbconvert (sharing one ``plotly.min.js``);
- ``report.md`` and ``report.html`` (:mod:`rspo.study.report`): a header (profile, date, machine, total
  time), what the profile shows and what is noise at its seeds, the claims table, the results table,
  the figures (inline in the HTML, plotly.js once), the notebooks with their key numbers, the
  machine, package versions and the reconstruction note.

A failing notebook stops the job with the notebook's name, the failing cell and the error - not a
bare traceback; its partly executed copy is kept for inspection.

``--finished-only`` (``finished_only=True``) trains nothing in notebooks 03-05: every notebook that
declares ``train_missing`` gets it False, so they use the finished runs found and name the missing
ones, and the report says at its top how many of the profile's table runs are finished and which
are missing (:func:`table_status`) - a report over a table that ``benchmarks/bench_learning.py`` is
still filling. The other notebooks run as usual.

``--env NAME`` (``env=NAME``) runs the profile on one environment of the registry: every notebook that
declares ``envs`` gets ``[NAME]`` (the table notebooks 03-05, and so the table runs trained first), every
one that declares ``env_name`` gets ``NAME``; the output folder is ``runs/reproduce-<profile>-<NAME>/``.
The environment is built once before any notebook runs (:func:`check_env`), so a missing extra or
missing data (``alfworld`` without ``$ALFWORLD_DATA``) is the adapter's one-line error, not a failed
notebook; a real engine's adapter has no offline warm start and needs a profile with a named model
(``rspo reproduce --profile gpu --env alfworld``).

``--publish docs/results-cpu.md`` also copies the report there for committing, with its PNG figures in
``docs/results-cpu/`` and the logs of its finished runs in ``results/cpu/runs/`` (:func:`publish_report`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rspo.core.paths import CHECKOUT as ROOT
from rspo.core.profiles import PROFILES, SHARED_RUNS, TABLE_NOTEBOOK, TRAIN_WORKERS

NOTEBOOKS_DIR = ROOT / "notebooks"


class NotebookFailed(RuntimeError):
    """A notebook raised: names the notebook, the cell and the error."""


@dataclass
class NotebookRun:
    name: str
    seconds: float
    output: Path


def notebooks(selected: list[str] | None = None, folder: Path = NOTEBOOKS_DIR) -> list[Path]:
    """The numbered notebooks in order (``selected``: stems or their ``NN`` prefixes)."""
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder} not found: rspo reproduce runs the notebooks of a checkout of the kit "
            "(git clone it and pip install -e it)"
        )
    found = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    if selected:
        found = [p for p in found if p.stem in selected or p.stem[:2] in selected]
        if not found:
            raise ValueError(f"no notebook matches {selected}")
    return found


def default_out(profile: str, env: str | None = None) -> Path:
    return ROOT / "runs" / (f"reproduce-{profile}-{env}" if env else f"reproduce-{profile}")


def runs_dir(profile: str, out: Path) -> Path:
    return SHARED_RUNS.get(profile, out / "runs")


def env_parameters(env: str | None) -> dict:
    """What ``--env NAME`` sets in every notebook that declares it: ``envs`` (the table notebooks) and
    ``env_name``; nothing without ``env``."""
    return {"envs": [env], "env_name": env} if env else {}


def check_env(profile: str, env: str) -> None:
    """Before any notebook runs: ``env`` names an environment of the registry (a ValueError naming the
    choices), the profile can train on it (an adapter has no offline warm start: it needs a named
    model), and it builds and resets on its first evaluation split - so a missing extra or missing data
    is the adapter's own one-line error (FileNotFoundError, ImportError)."""
    import rspo.core.envs
    from rspo.core.config import field_choices
    from rspo.core.profiles import TRAIN_PROFILES

    choices = field_choices()["env"]
    if env not in choices:
        raise ValueError(f"unknown environment {env!r} for --env; choose one of: {', '.join(choices)}")
    train_profile = PROFILES.get(profile, {}).get("*", {}).get("profile", profile)
    named_model = TRAIN_PROFILES.get(train_profile, {}).get("common", {}).get("model")
    if rspo.core.envs.spec(env).tokenizer_family is None and not named_model:
        raise ValueError(
            f"{env} has no offline warm start (a real engine's adapter): it trains a named model, "
            f"which the {profile} profile does not; use --profile gpu"
        )
    instance = rspo.core.envs.make(env, split=rspo.core.envs.env_class(env).eval_splits[0])
    instance.reset(task_id=instance.task_ids[0])


def parameters(
    profile: str, path: Path, out: Path, finished_only: bool = False, env: str | None = None
) -> dict:
    """The profile's parameters for the notebook at ``path``, limited to those it declares
    (``finished_only``: ``train_missing`` False; ``env``: :func:`env_parameters`)."""
    import papermill

    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of: {', '.join(PROFILES)}")
    p = PROFILES[profile]
    wanted = {**p.get("*", {}), **p.get(path.stem, {}), **env_parameters(env)}
    wanted.update(figures_dir=str(out / "figures"), runs_dir=str(runs_dir(profile, out)))
    if finished_only:
        wanted["train_missing"] = False
    declared = papermill.inspect_notebook(str(path))
    return {k: v for k, v in wanted.items() if k in declared}


def _failure(path: Path, output: Path, err: Exception) -> NotebookFailed:
    """A readable message from papermill's execution error: which cell, what error."""
    import nbformat

    where = ""
    try:
        nb = nbformat.read(output, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        for i, cell in enumerate(code, 1):
            if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
                first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
                where = f" in code cell {i} of {len(code)} ({first[:80]!r})"
                break
    except Exception:  # the copy may not exist if the kernel never started
        pass
    ename, evalue = getattr(err, "ename", type(err).__name__), getattr(err, "evalue", str(err))
    return NotebookFailed(f"notebook {path.name} failed{where}: {ename}: {evalue} (executed copy: {output})")


# minutes to build each warm start on an idle 2-core machine (measured: detour 58 s from a fresh clone,
# 73 s at the quick profile's 7 rooms; household and shop about 4 minutes)
WARM_START_MINUTES = {"detour": 1, "household": 4, "shop": 4}


def ensure_warm_starts(profile: str, write=print, env: str | None = None) -> None:
    """Build the warm-started default policies the profile's notebooks load (``env``: only its), here,
    with the warm start's progress bar in the terminal - not silently inside the first notebook
    (minutes on a fresh cache)."""
    from rspo.core.profiles import TRAIN_PROFILES
    from rspo.core.sft import build_default, default_config, default_policy_path
    from rspo.study.experiments import run_config

    settings = PROFILES.get(profile, {}).get("*", {})
    if TRAIN_PROFILES.get(settings.get("profile", ""), {}).get("common", {}).get("model"):
        return  # a named model: nothing to warm-start
    for name in [env] if env else settings.get("envs", []):
        # the warm start of the profile's environment options (the quick lab's 7 rooms), the runs' own
        options = run_config(settings.get("profile", profile), name, "grpo", "outcome", 0, ".").env_options
        config = default_config(name, options)
        path = default_policy_path(name, config)
        if not path.is_dir():
            write(
                f"building the warm-started default {name} policy once (about {WARM_START_MINUTES.get(name, 4)} "
                f"min on an idle 2-core machine, several times that on a busy one; cached in {path.parent}) ..."
            )
            t0 = time.perf_counter()
            build_default(name, config)
            write(f"warm start of {name} built in {time.perf_counter() - t0:.0f} s")


def ensure_table_runs(profile: str, out: Path, write=print, env: str | None = None) -> None:
    """Train the profile's table runs that are not finished (:func:`table_status`), here, two at a time
    (``TRAIN_WORKERS``) with a line per finished run and the running runs' iterations every 20 s - not
    silently inside notebooks 03-05, which then load them."""
    from rspo.study.experiments import train_runs

    _, missing = table_status(profile, out, env)
    if missing:
        train_runs(missing, workers=TRAIN_WORKERS.get(profile, 1), write=write)


def run_notebooks(
    profile: str,
    out: Path,
    selected: list[str] | None = None,
    write=print,
    finished_only: bool = False,
    env: str | None = None,
) -> list[NotebookRun]:
    import papermill

    if env:
        check_env(profile, env)
    out.mkdir(parents=True, exist_ok=True)
    ensure_warm_starts(profile, write, env)
    if not finished_only and not selected:
        ensure_table_runs(profile, out, write, env)
    from rspo.core.sft import heartbeat

    done = []
    paths = notebooks(selected)
    for k, path in enumerate(paths, 1):
        output = out / path.name
        write(f"[{k}/{len(paths)}] {path.name} ...")
        t0 = time.perf_counter()
        # papermill's bar moves per cell: a cell that trains (notebook 06: about 100 s) would leave it
        # still, so a line every 20 s says the notebook is running
        try:
            with heartbeat(f"{path.name} running", announce=False):
                papermill.execute_notebook(
                    str(path),
                    str(output),
                    parameters=parameters(profile, path, out, finished_only, env),
                    cwd=str(ROOT),
                    kernel_name="python3",
                    progress_bar=True,  # one bar of executed cells in the terminal
                    # the kernel's errors only: not its "running over TCP without encryption" warning,
                    # printed once per notebook (the kernel listens on localhost only)
                    extra_arguments=["--IPKernelApp.log_level=ERROR"],
                )
        except papermill.PapermillExecutionError as err:
            raise _failure(path, output, err) from None
        seconds = time.perf_counter() - t0
        write(f"[{k}/{len(paths)}] {path.name} done in {seconds:.0f} s")
        done.append(NotebookRun(path.stem, seconds, output))
    return done


def table_parameters(profile: str, env: str | None = None) -> dict:
    """``profile``, ``envs``, ``algos``, ``seeds``, ``ablations`` and ``ablation_seeds`` of the
    profile's table: what notebook 05 (which reads every run of it) runs with - its parameters cell's
    values, with the profile's on top (and ``env``'s, :func:`env_parameters`)."""
    import ast

    import papermill

    declared = papermill.inspect_notebook(str(NOTEBOOKS_DIR / f"{TABLE_NOTEBOOK}.ipynb"))
    keys = ("profile", "envs", "algos", "seeds", "ablations", "ablation_seeds")
    values = {k: ast.literal_eval(declared[k]["default"]) for k in keys}
    p = PROFILES.get(profile, {})  # a training scale without a reproduce profile (smoke): the defaults
    wanted = {**p.get("*", {}), **p.get(TABLE_NOTEBOOK, {}), **env_parameters(env)}
    values.update({k: v for k, v in wanted.items() if k in keys})
    return values


def table_status(profile: str, out: Path, env: str | None = None) -> tuple[list, list]:
    """The TrainConfigs of the profile's table runs (envs x algos x rewards x seeds, rewards
    :data:`rspo.core.config.REWARDS`, then notebook 05's ablation runs) split into finished and missing,
    by what its runs folder holds; a run there with another config counts as missing. Trains nothing."""
    from rspo.core.config import REWARDS
    from rspo.study.experiments import ablation_configs, finished_run, grid_configs

    t = table_parameters(profile, env)
    where = runs_dir(profile, out)
    configs = grid_configs(t["profile"], where, t["envs"], t["algos"], REWARDS, t["seeds"])
    ablation_seeds = [s for s in t["seeds"] if s in t["ablation_seeds"]]  # as notebook 05 runs them
    configs += ablation_configs(t["profile"], where, t["envs"], t["ablations"], ablation_seeds)
    done, missing = [], []
    for cfg in configs:
        try:
            ok = finished_run(cfg) is not None
        except ValueError:  # a run of another config under this name
            ok = False
        (done if ok else missing).append(cfg)
    return done, missing


def _status_lines(done: list, missing: list) -> list[str]:
    """The finished-only report's opening: K of N runs finished, the missing ones by name without
    the seed (env-algo-reward, or an ablation's env-grpo-rspo-key=value)."""
    total = len(done) + len(missing)
    if not missing:
        return [
            f"> **finished-only report: all {total} runs of the profile finished** "
            "(notebooks 03–05 trained nothing).",
            "",
        ]
    lines = [
        f"> **partial report: {len(done)} of {total} runs of the profile finished** "
        "(`--finished-only`: notebooks 03–05 trained nothing; their tables and figures are over the "
        "finished runs).",
        "",
        "Missing runs (name: seeds):",
        "",
    ]
    seeds: dict[str, list[int]] = {}
    for cfg in missing:
        seeds.setdefault(cfg.name.removesuffix(f"-s{cfg.seed}"), []).append(cfg.seed)
    lines += [f"- {name}: {', '.join(map(str, s))}" for name, s in seeds.items()]
    return lines + [""]


def write_report(
    profile: str,
    out: Path,
    runs: list[NotebookRun],
    finished_only: bool = False,
    total_seconds: float | None = None,
    render: bool = True,
    env: str | None = None,
) -> Path:
    """``report.md`` and ``report.html`` in ``out`` (:func:`rspo.study.report.write_report`; ``finished_only``:
    opening with how many of the profile's table runs are finished, and which are missing)."""
    from rspo.study.report import write_report as write

    status = _status_lines(*table_status(profile, out, env)) if finished_only else None
    return write(profile, out, runs, runs_dir(profile, out), status, total_seconds, render)


def reproduce(
    profile: str = "quick",
    out: str | Path | None = None,
    selected: list[str] | None = None,
    write=print,
    finished_only: bool = False,
    env: str | None = None,
) -> Path:
    """Run the notebooks of ``profile`` and write the report; returns the path of ``report.md``.
    ``finished_only``: notebooks 03-05 train nothing and use the finished runs (a partial report);
    ``env``: on that environment only (:func:`env_parameters`, checked first by :func:`check_env`)."""
    out = Path(out) if out else default_out(profile, env)
    t0 = time.perf_counter()
    runs = run_notebooks(profile, out, selected, write, finished_only, env)
    write("writing the report (the notebooks rendered to HTML) ...")
    report = write_report(profile, out, runs, finished_only, time.perf_counter() - t0, env=env)
    write(f"report: {report} ({time.perf_counter() - t0:.0f} s in all)")
    return report


def published_runs(dest: str | Path) -> Path:
    """Where the run logs of a report published at ``dest`` go: ``results/<name>/runs/`` in the
    ``results/`` folder beside the report's folder, ``<name>`` the report's file name without its
    ``results-`` prefix (``docs/results-cpu.md`` -> ``results/cpu/runs/``, the folder
    :func:`restore_published` reads by default)."""
    dest = Path(dest)
    return dest.parent.parent / "results" / dest.stem.removeprefix("results-") / "runs"


def check_published_runs(where: Path) -> None:
    """A one-line ValueError unless ``where`` is missing or holds only what
    :func:`rspo.study.analysis.archive_runs` writes (run folders of ``config.json`` and ``metrics.jsonl``,
    ``initial-<env>.json``): publishing replaces that folder, and must not remove what it did not write."""
    if not where.exists():
        return
    if not where.is_dir():
        raise ValueError(f"{where} is a file, where the published run logs go; move it or publish elsewhere")
    from rspo.study.analysis import RUN_LOGS

    for p in where.iterdir():
        ours = (p.is_file() and p.name.startswith("initial-") and p.suffix == ".json") or (
            p.is_dir() and all(q.name in RUN_LOGS and q.is_file() for q in p.iterdir())
        )
        if not ours:
            raise ValueError(
                f"{where} holds {p.name}, which no publication wrote: publishing replaces that folder; "
                "move it, or publish elsewhere"
            )


def publish_report(report: str | Path, dest: str | Path, runs: str | Path | None = None) -> Path:
    """Copy ``report`` (a ``report.md`` written by :func:`write_report`) to ``dest`` (e.g.
    ``docs/results-cpu.md``) for committing: its PNG figures go to a folder beside it named after it
    (``docs/results-cpu/``, the report's pictures) and the links follow them; HTML figures (several MB
    each, plotly.js embedded) and the executed notebooks stay behind, named without a link. ``runs``:
    the runs folder the report was made from; the logs of its finished runs go to the results tree,
    ``results/cpu/runs/`` (:func:`published_runs`, :func:`rspo.study.analysis.archive_runs`), from which
    ``--restore`` rebuilds them on another machine. Returns ``dest``."""
    import re
    import shutil

    from rspo.core.atomic import atomic_write_text

    report, dest = Path(report), Path(dest)
    if not report.is_file():
        raise FileNotFoundError(f"no report at {report}: run `rspo reproduce` first")
    if dest.suffix != ".md":
        raise ValueError(f"publish to a Markdown file (docs/results-<profile>.md), not {dest}")
    assets = dest.with_suffix("")
    if assets.exists() and not assets.is_dir():
        raise ValueError(f"{assets} is a file, where the report's figures go; move it or publish elsewhere")
    if runs is not None:
        check_published_runs(published_runs(dest))
    if dest.is_file():  # the figures of an earlier publication: those its report links, nothing else
        earlier = re.findall(rf"!\[[^\]]*\]\({re.escape(assets.name)}/([^/)\s]+\.png)\)", dest.read_text())
        for name in earlier:
            (assets / name).unlink(missing_ok=True)
        if assets.is_dir() and not any(assets.iterdir()):
            assets.rmdir()
    dest.parent.mkdir(parents=True, exist_ok=True)

    def link(m: re.Match) -> str:
        bang, text, target = m.group(1), m.group(2), m.group(3)
        source = report.parent / target
        if bang and target.endswith(".png") and source.is_file():
            assets.mkdir(exist_ok=True)
            shutil.copy2(source, assets / source.name)
            return f"![{text}]({assets.name}/{source.name})"
        if target.endswith(".html") and target.startswith("figures/"):
            return f"{text} (an interactive HTML figure of the run, not published)"
        if target.endswith((".ipynb", ".html")):
            return text  # the executed notebook and its rendered page lie in the run's output folder
        return m.group(0)

    text = re.sub(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)", link, report.read_text())
    atomic_write_text(dest, text)
    if runs is not None:
        from rspo.study.analysis import archive_runs

        archive_runs(runs, published_runs(dest))
    return dest


def restore_published(profile: str, archive: str, where: Path, write=print) -> list[str]:
    """``--restore [DIR]`` of ``rspo reproduce`` and ``bench_learning``: the run logs in ``archive``
    (empty: those published with the profile's report, ``results/<profile>/runs/``) put back
    under ``where`` (:func:`rspo.study.analysis.restore_runs`)."""
    from rspo.study.analysis import restore_runs

    archive = Path(archive) if archive else ROOT / "results" / profile / "runs"
    restored = restore_runs(archive, where)
    write(f"restored {len(restored)} finished runs from {archive} into {where}")
    return restored


def main(args, write=print) -> int:
    env = getattr(args, "env", None)
    if getattr(args, "restore", None) is not None:
        where = runs_dir(args.profile, Path(args.out) if args.out else default_out(args.profile, env))
        restore_published(args.profile, args.restore, where, write)
    try:
        report = reproduce(
            args.profile,
            args.out,
            args.notebooks,
            write,
            finished_only=getattr(args, "finished_only", False),
            env=env,
        )
    except NotebookFailed as err:
        print(f"rspo reproduce: {err}", file=sys.stderr)
        return 1
    except (FileNotFoundError, ImportError) as err:  # --env's extra or data missing (check_env): one line
        print(f"rspo: error: {err}", file=sys.stderr)
        return 2
    if getattr(args, "publish", None):
        published = publish_report(report, args.publish, runs=runs_dir(args.profile, report.parent))
        write(f"published: {published} (run logs in {published_runs(published)}/)")
    return 0
