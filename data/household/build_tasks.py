"""Build ``data/household/tasks.jsonl``, the household task list, from its master seed.

    python data/household/build_tasks.py           # rewrite tasks.jsonl (byte-identical every time)
    python data/household/build_tasks.py --check   # exit 1 if the committed file differs

The generation logic lives in :mod:`rspo.core.envs.household.tasks` (the environment rebuilds every
task's world from its line); this script only writes or checks the file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "tasks.jsonl"

try:
    import rspo  # noqa: F401
except ImportError:  # run from a checkout without installing the package
    sys.path.insert(0, str(HERE.parents[1]))


def build() -> tuple[str, dict[str, int]]:
    """The file's text and the rejection counts of the generation."""
    from rspo.core.envs.household.tasks import build_tasks, dumps

    tasks, stats = build_tasks()
    return dumps(tasks), stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead")
    args = parser.parse_args(argv)
    text, stats = build()
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print("tasks.jsonl is up to date" if same else "tasks.jsonl differs from a fresh build")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {OUT} ({len(text.splitlines())} tasks, {len(text.encode()):,} bytes); rejected: {stats}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
