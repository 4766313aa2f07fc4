"""The lab's study 2 (docs/lab/protocol-2.md): train its runs, print the premise gate, the claims.

    python benchmarks/lab_study2.py train --phase scan [--stage A] [--workers 2] [--root DIR]
    python benchmarks/lab_study2.py gate --phase scan [--stage A] [--root DIR]
    python benchmarks/lab_study2.py train --phase confirm --setting L7-m0.15 [--candidate 0]
    python benchmarks/lab_study2.py gate --phase confirm --setting L7-m0.15
    python benchmarks/lab_study2.py train --phase rspo --setting L7-m0.15
    python benchmarks/lab_study2.py claims --setting L7-m0.15
    python benchmarks/lab_study2.py summary --root results/lab/study2     # docs/lab/findings.md's bullets
    python benchmarks/lab_study2.py archive --phase scan --root runs/lab-study2 [--to results/lab/study2]
    python benchmarks/lab_study2.py train --phase study3                  # study 3 (docs/lab/protocol-3.md)
    python benchmarks/lab_study2.py study3 --root results/lab             # its table (c'), from the logs
    python benchmarks/lab_study2.py archive --phase study3 --to results/lab

Runs train several at a time (``--workers``, default 2: one thread each on a 2-core machine). Safe
in parallel: each run writes only its own folder (``<root>/<phase>/<setting>/<run>/``, with its
``config.json``, ``metrics.jsonl``, ``fingerprint.json`` and checkpoint); the warm start of each
setting is built once, in this process, before any worker starts, and under a file lock, so two
scripts started at once build it once; the shared initial evaluation of a folder is written here
first. A run cut short resumes where it stopped when the command is run again; a finished run is
read, not retrained. Nothing is read from or written to the archive in results/ unless ``--root``
points there.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rspo.study import study2, study3  # noqa: E402
from rspo.study.analysis import to_markdown  # noqa: E402

DEFAULT_ROOT = ROOT / "runs" / "lab-study2"


def configs_of(args) -> list:
    if args.phase == "scan":
        return study2.scan_configs(args.root, args.stage)
    if args.phase == "study3":
        return study3.configs(args.root)
    setting = study2.find_setting(args.setting)
    if args.phase == "confirm":
        return study2.confirm_configs(args.root, setting, args.candidate)
    return study2.rspo_configs(args.root, setting, args.candidate)


def train(args) -> None:
    from rspo.study.experiments import train_runs

    configs = configs_of(args)
    t0 = time.perf_counter()
    print(
        f"study 2, phase {args.phase}: {len(configs)} runs into {args.root}, {args.workers} at a time "
        "(warm starts of new settings are built first: about 2-4 minutes each on 2 idle cores)",
        flush=True,
    )
    # GRPO's runs first (the protocol's 10 seeds), then PPO's and GiGPO's: a phase cut short has whole
    # algorithms, not a few seeds of each
    for algo in dict.fromkeys(cfg.algo for cfg in configs):
        todo = [cfg for cfg in configs if cfg.algo == algo]
        train_runs(todo, workers=args.workers, write=lambda line: print(line, flush=True))
    print(f"phase {args.phase}: every run finished ({time.perf_counter() - t0:.0f} s)", flush=True)


def gate(args) -> None:
    if args.phase == "scan":
        settings = study2.STAGES[args.stage].settings
        rule = (
            f"scan rule: (a) estimate <= 0.5, (b) estimate <= {100 * study2.SCAN_B_MARGIN:+.0f} points, "
            f"dense reaches {study2.REACH:.0%} on >= {study2.SCAN_REACH} of 3 seeds"
        )
    else:
        settings = [study2.find_setting(args.setting)]
        rule = f"gate: (a) yes, (b) yes, dense reaches {study2.REACH:.0%} on >= {study2.CONFIRM_REACH} of 10 seeds"
    head, lines, results = study2.gate_table(args.root, args.phase, settings, args.boot)
    print(f"premise gate, phase {args.phase} ({rule}); 95% bootstrap intervals, {args.boot}x\n")
    print(to_markdown(head, lines) if lines else "(no setting has finished outcome and dense runs)")
    head, lines = study2.behaviour_table(args.root, args.phase, settings)
    if lines:
        print("\nwhat the runs did (means over seeds; % rollout / % greedy test success):\n")
        print(to_markdown(head, lines))
    if args.phase == "scan" and results:
        order = study2.ranked(results)
        print("\nscan-passing settings, in the protocol's order: " + (", ".join(order) if order else "none"))


def claims(args) -> None:
    setting = study2.find_setting(args.setting)
    head, lines, notes = study2.claims_table(args.root, setting, args.candidate, args.boot)
    print(f"study 2 claims at {setting.name} (protocol 2's rules); points of greedy test success\n")
    print(to_markdown(head, lines) if lines else "(no finished RSPO runs)")
    for note in notes:
        print(note)
    if lines:
        print("\n" + study2.SPEED_CAPTION.format(setting=setting.name) + "\n")
        print(to_markdown(*study2.speed_table(args.root, setting, args.candidate, args.boot)))


def summary(args) -> None:
    """What the study found so far, as docs/lab/findings.md's bullets (computed from the archive's numbers)."""
    print(study2.finding_markdown(args.root, args.boot), end="")


def study3_table(args) -> None:
    """Study 3's finding (docs/lab/protocol-3.md): headline, table and what is reported beside it, from
    the runs under ``<root>/study3/`` - docs/lab/findings.md's block (no verdict while a run is missing)."""
    print(study3.finding_markdown(args.root, args.boot), end="")


def archive(args) -> None:
    """Copy the finished runs of a phase (every file but checkpoints and locks) into ``--to``, keeping the
    ``<phase>/<setting>/<run>/`` layout; a file already there with other bytes is an error."""
    import filecmp
    import shutil

    from rspo.study.analysis import load_run

    src = args.root / args.phase
    copied = same = 0
    folders = set()
    for config in sorted(src.glob("*/*/config.json")):
        run_dir = config.parent
        if not load_run(run_dir).finished:
            print(f"  skipped {run_dir.relative_to(args.root)}: not finished")
            continue
        shared = [] if run_dir.parent in folders else sorted(run_dir.parent.glob("initial-*.json"))
        folders.add(run_dir.parent)
        for path in shared + sorted(run_dir.rglob("*")):
            rel = path.relative_to(args.root)
            if not path.is_file() or "checkpoint" in rel.parts or path.name.endswith(".lock"):
                continue
            dest = args.to / rel
            if dest.exists():
                if not filecmp.cmp(path, dest, shallow=False):
                    raise SystemExit(f"{dest} exists with other contents: archive refuses to overwrite it")
                same += 1
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
            copied += 1
    print(f"archived phase {args.phase} into {args.to}: {copied} files copied, {same} already there")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, fn in (
        ("train", train),
        ("gate", gate),
        ("claims", claims),
        ("archive", archive),
        ("summary", summary),
        ("study3", study3_table),
    ):
        p = sub.add_parser(name)
        p.set_defaults(fn=fn)
        p.add_argument(
            "--root", type=Path, default=DEFAULT_ROOT, help=f"where the runs lie (default {DEFAULT_ROOT})"
        )
        p.add_argument(
            "--setting", help="a setting protocol 2 registers, e.g. L7-m0.15 (confirm, rspo, claims)"
        )
        p.add_argument(
            "--candidate", type=int, default=0, choices=(0, 1), help="0: first confirmation seeds, 1: second"
        )
        if name == "archive":
            p.add_argument("--to", type=Path, default=ROOT / "results" / "lab" / "study2", help="the archive")
        if name not in ("claims", "summary", "study3"):
            p.add_argument("--phase", choices=("scan", "confirm", "rspo", "study3"), required=True)
            p.add_argument("--stage", choices=tuple(study2.STAGES), default="A")
        if name == "train":
            p.add_argument("--workers", type=int, default=2, help="runs at a time, each in its own process")
        elif name != "archive":
            p.add_argument("--boot", type=int, default=2000)
    args = parser.parse_args(argv)
    if args.command in ("train", "gate") and args.phase not in ("scan", "study3") and not args.setting:
        parser.error(f"--phase {args.phase} needs --setting (protocol 2 names them)")
    if args.command == "claims" and not args.setting:
        parser.error("claims needs --setting")
    args.fn(args)


if __name__ == "__main__":
    main()
