"""Mutation testing of the maths core with mutmut (not in CI; results in docs/mutation.md).

For each module it copies the source tree (``rspo/``, ``tests/``, ``data/``, ``pyproject.toml``) into its
own scratch folder, so the checkout is never rewritten (mutmut mutates a ``mutants/`` copy, and other
processes may be importing ``rspo`` from this checkout), runs ``mutmut run`` there against the module's
own test files only, and prints: mutants, killed, survived (and timeouts / other), the survival rate and
every surviving mutant's diff.

    pip install mutmut            # 3.x; not in the dev extra (it pulls textual, libcst, setproctitle)
    python benchmarks/mutation.py                       # every module below
    python benchmarks/mutation.py rewards losses        # some of them
    python benchmarks/mutation.py advantages --timeout 900 --children 1 --workdir /tmp/rspo-mutation
    python benchmarks/mutation.py claims --recheck survivors.txt --tests tests/test_claims_rules.py

A module's run is stopped after ``--timeout`` seconds (the counts are then of the mutants tested so far,
and the line says so). Run it on an idle machine or with ``--children 1`` on a busy one.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# module -> the tests that exercise it (pytest node ids or files): the mutants of a module run only these
MODULES: dict[str, list[str]] = {
    "advantages": ["tests/test_advantages.py"],
    "losses": [
        "tests/test_losses.py",
        "tests/test_glue.py::test_update_logs_hand_computed_policy_loss_approx_kl_ratio_and_clipfrac",
    ],
    "rewards": ["tests/test_update.py", "tests/test_swap.py", "tests/test_rewards.py"],
    "swap": ["tests/test_swap.py"],
    "claims": [
        "tests/test_claims.py",
        "tests/test_claims_rules.py",
        "tests/test_study2.py",
        "tests/test_study3.py",
        "tests/test_report.py",
    ],
    "update": [
        "tests/test_update.py",
        "tests/test_update_edges.py",
        "tests/test_swap.py",
        "tests/test_glue.py::test_positive_entropy_bonus_raises_the_entropy",
        "tests/test_glue.py::test_gradient_is_clipped_to_max_grad_norm_and_the_logged_norm_is_the_unclipped_one",
        "tests/test_glue.py::test_update_logs_hand_computed_policy_loss_approx_kl_ratio_and_clipfrac",
        "tests/test_glue.py::test_the_logged_numbers_average_over_minibatches_and_epochs",
        "tests/test_glue.py::test_kl_penalty_logs_the_k3_value_and_pulls_the_policy_back_to_its_reference",
        "tests/test_glue.py::test_off_policy_turns_use_their_proximal_log_probs_and_truncated_importance_weights",
        "tests/test_reliability.py::test_a_nan_loss_stops_training_and_keeps_the_last_good_checkpoint",
        "tests/test_reliability.py::test_a_nan_gradient_stops_before_the_optimizer_step",
        "tests/test_reliability.py::test_nan_parameters_after_a_step_stop_the_run_and_are_never_saved",
    ],
    # the trainer's loop and its step accounting, RSPO's explorer, checkpoint/resume (issue 33 item 6)
    "trainer": [
        "tests/test_trainer.py",
        "tests/test_trainer_steps.py",
        "tests/test_explorer.py",
        "tests/test_glue.py",
        "tests/test_metrics.py",
        "tests/test_replay.py",
    ],
    "explorer": ["tests/test_explorer.py", "tests/test_trainer.py", "tests/test_glue.py"],
    "checkpoint": [
        "tests/test_checkpoint.py",
        "tests/test_resume_rules.py",
        "tests/test_reliability.py",
        "tests/test_reliability2.py",
        "tests/test_trainer.py",
    ],
}
STATUS = re.compile(r"^\s*(\S+__mutmut_\d+):\s*(.+?)\s*$")


def source(module: str) -> str:
    """The module's file, relative to the checkout: ``update`` -> ``rspo/core/update.py``."""
    (path,) = (ROOT / "rspo").rglob(f"{module}.py")
    return path.relative_to(ROOT).as_posix()


def mutmut_config(module: str, tests: list[str]) -> str:
    def toml_list(xs):
        return "[" + ", ".join(f'"{x}"' for x in xs) + "]"

    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["rspo"]\n'
        f'only_mutate = ["{source(module)}"]\n'
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-m", "not slow"]\n'  # the fast suite only
        "use_git_change_detection = false\n"
        'also_copy = ["data", "results", "docs", "benchmarks", "README.md"]\n'  # beside mutants/rspo, as in the checkout
    )


def prepare(module: str, workdir: Path) -> Path:
    """A scratch copy of the source tree with a ``[tool.mutmut]`` section for ``module``."""
    tests = [t for t in MODULES[module] if (ROOT / t.split("::")[0]).exists()]
    work = workdir / module
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis")
    # results/, docs/, benchmarks/: the archive tests and the kill test read them
    for name in ("rspo", "tests", "data", "results", "docs", "benchmarks"):
        shutil.copytree(ROOT / name, work / name, ignore=ignore)
    shutil.copy2(ROOT / "README.md", work / "README.md")
    (work / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + mutmut_config(module, tests))
    return work


def _env(work: Path) -> dict:
    return {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "RSPO_DATA": str(work / "data"),  # the mutants/ copy has no data/ beside its rspo/
        "PYTHONPATH": "",
    }


def mutmut(work: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "mutmut", *args]
    return subprocess.run(cmd, cwd=work, env=_env(work), capture_output=True, text=True)


def mutmut_run(work: Path, children: int, timeout: float, only: list[str] = ()) -> tuple[str, bool]:
    """``mutmut run`` in its own process group, stopped (the group: mutmut forks a worker per mutant)
    after ``timeout`` seconds; its log and whether it was stopped. Finished mutants keep their result."""
    log = work / "mutmut-run.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mutmut", "run", "--max-children", str(children), *only],
            cwd=work,
            env=_env(work),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=timeout)
            stopped = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            stopped = True
    return log.read_text(errors="replace"), stopped


def statuses(work: Path) -> dict[str, str]:
    out = mutmut(work, "results", "--all", "true").stdout
    return {m.group(1): m.group(2) for line in out.splitlines() if (m := STATUS.match(line))}


def run_module(module: str, workdir: Path, timeout: float, children: int, only: list[str] = ()) -> dict:
    work = prepare(module, workdir)
    t0 = time.perf_counter()
    log, stopped = mutmut_run(work, children, timeout, only)
    seconds = time.perf_counter() - t0
    status = statuses(work)
    tested = {k: v for k, v in status.items() if v not in ("not checked",)}
    killed = sorted(k for k, v in tested.items() if v == "killed")
    survived = sorted(k for k, v in tested.items() if v == "survived")
    other = sorted(k for k, v in tested.items() if v not in ("killed", "survived"))
    diffs = {name: mutmut(work, "show", name).stdout.strip() for name in survived}
    return dict(
        module=module,
        work=work,
        seconds=seconds,
        stopped=stopped,
        total=len(status),
        tested=len(tested),
        killed=killed,
        survived=survived,
        other={k: tested[k] for k in other},
        diffs=diffs,
        log_tail=log[-2000:],
    )


def recheck(module: str, workdir: Path, names: list[str], tests: list[str]) -> dict[str, str]:
    """Run ``tests`` (the fast ones) against each mutant in ``names`` of an earlier run's scratch copy, as
    mutmut does (``MUTANT_UNDER_TEST`` picks the mutant): "killed" when a test fails. For the tests
    written after a run, against the survivors it listed; copy them into ``<work>/mutants/tests`` first
    (``--tests`` does)."""
    work = workdir / module
    mutants = work / "mutants"
    for t in tests:
        shutil.copy2(ROOT / t.split("::")[0], mutants / t.split("::")[0])
    env = {**_env(work), "RSPO_DATA": str(work / "data")}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not slow", *tests]
    clean = subprocess.run(cmd, cwd=mutants, env={**env, "MUTANT_UNDER_TEST": ""}, capture_output=True)
    if clean.returncode:
        raise SystemExit(f"the tests fail without a mutant in {mutants}: rerun the module first")
    out = {}
    for name in names:
        rc = subprocess.run(cmd, cwd=mutants, env={**env, "MUTANT_UNDER_TEST": name}, capture_output=True)
        out[name] = "killed" if rc.returncode else "survived"
        print(f"  {out[name]}: {name}", flush=True)
    return out


def report(r: dict) -> None:
    tested, surv = r["tested"], len(r["survived"])
    rate = surv / tested if tested else float("nan")
    head = f"{source(r['module'])}: {r['total']} mutants"
    if r["stopped"]:
        head += f" (stopped after {r['seconds']:.0f} s: {tested} tested)"
    print(
        f"{head}, killed {len(r['killed'])}, survived {surv}, other {len(r['other'])} "
        f"-> survival {rate:.1%} of tested ({r['seconds']:.0f} s; {r['work']})"
    )
    for name, status in r["other"].items():
        print(f"  {status}: {name}")
    for name in r["survived"]:
        print(f"\n  survived: {name}")
        print("    " + r["diffs"][name].replace("\n", "\n    "))
    if not r["total"]:
        print("  mutmut reported no mutants; the end of its log:\n" + r["log_tail"])
    print(flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", help="some of " + ", ".join(MODULES) + " (default: all)")
    ap.add_argument(
        "--workdir", default="/tmp/rspo-mutation", help="scratch folder (one subfolder per module)"
    )
    ap.add_argument(
        "--timeout", type=float, default=900.0, help="seconds per module before its run is stopped"
    )
    ap.add_argument("--children", type=int, default=1, help="mutants tested in parallel")
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        help="test only the mutants matching this glob, e.g. 'rspo.core.update.x_join_batches*' (repeatable)",
    )
    ap.add_argument(
        "--recheck",
        metavar="FILE",
        help="mutant names, one a line (an earlier run's survivors): run --tests against each in that run's "
        "scratch copy instead of a new run",
    )
    ap.add_argument("--tests", nargs="*", default=[], help="with --recheck: the test files or node ids")
    args = ap.parse_args(argv)
    if args.recheck:
        if len(args.modules) != 1 or not args.tests:
            ap.error("--recheck takes one module and --tests")
        names = [n.strip() for n in Path(args.recheck).read_text().splitlines() if n.strip()]
        result = recheck(args.modules[0], Path(args.workdir), names, args.tests)
        killed = sum(v == "killed" for v in result.values())
        print(f"{len(names)} mutants: killed {killed}, survived {len(names) - killed}")
        return 0
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        ap.error(f"unknown module(s) {', '.join(unknown)}; choose from {', '.join(MODULES)}")
    results = []
    for module in args.modules or list(MODULES):
        only = [
            g for g in args.only if g.startswith(source(module).removesuffix(".py").replace("/", ".") + ".")
        ]
        r = run_module(module, Path(args.workdir), args.timeout, args.children, only)
        report(r)
        results.append(r)
    print("module       mutants  tested  killed  survived  other  survival")
    for r in results:
        tested = r["tested"]
        rate = len(r["survived"]) / tested if tested else float("nan")
        print(
            f"{r['module']:<12} {r['total']:>7} {tested:>7} {len(r['killed']):>7} {len(r['survived']):>9} "
            f"{len(r['other']):>6}  {rate:>7.1%}" + ("  (stopped)" if r["stopped"] else "")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
