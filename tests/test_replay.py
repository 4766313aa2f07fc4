"""rspo replay: an archived run's first iterations re-run and compared row by row (issue 30)."""

from __future__ import annotations

import json
import shutil

import pytest

from rspo.cli import main
from rspo.core.config import TrainConfig
from rspo.core.replay import first_difference
from rspo.core.trainer import Trainer


def test_first_difference_names_the_first_changed_value_and_skips_timings():
    rows = [{"iteration": 0, "eval/success": 0.5}, {"iteration": 1, "a": 1.0, "time/total": 3.0}]
    same = [{"iteration": 0, "eval/success": 0.5}, {"iteration": 1, "a": 1.0, "time/total": 9.0, "eval/x": 1}]
    assert first_difference(rows, same, 1) == (None, 4)  # iteration, eval/success; iteration, a
    assert first_difference(rows, [same[0], {"iteration": 1, "a": 1.0 + 1e-12}], 1)[0] == (
        1,
        "a",
        1.0,
        1.0 + 1e-12,
    )
    assert first_difference(rows, [same[0], {"iteration": 1, "a": 1.0 + 1e-12}], 1, tolerance=1e-9)[0] is None
    assert first_difference(rows, [same[0]], 1)[0] == (1, "(the whole row)", "present", "missing")
    assert first_difference(rows, [same[0], {"iteration": 1}], 1)[0] == (1, "a", 1.0, "missing")
    assert first_difference(rows[:1], same, 1)[0] == (1, "(the whole row)", "missing", "present")
    assert first_difference(rows, same[:1], 0) == (None, 2)  # rows past the replay's length are not read


@pytest.mark.slow
def test_a_run_replays_exactly_and_a_tampered_row_is_named(tmp_path, capsys):
    """Trained with the lab's warm start (the suite's one full warm start), replayed in a scratch
    folder: equal; then one archived value changed: exit 1 naming the row and the key."""
    cfg = TrainConfig(
        env="detour",
        iterations=3,
        tasks_per_iter=2,
        group_size=2,
        eval_every=2,
        eval_tasks=4,
        out_dir=str(tmp_path / "archive"),
        progress=False,
        threads=1,
        lr=1e-3,
        reward="rspo",
    )
    Trainer(cfg).run()
    assert main(["replay", str(cfg.run_dir), "--iterations", "2", "--out", str(tmp_path / "r1")]) == 0
    assert "replay matches: iterations 0-2" in capsys.readouterr().out
    tampered = tmp_path / "tampered"
    shutil.copytree(cfg.run_dir, tampered)
    lines = (tampered / "metrics.jsonl").read_text().splitlines()
    row = json.loads(lines[2])
    row["reward/return"] += 0.5
    lines[2] = json.dumps(row)
    (tampered / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["replay", str(tampered), "--iterations", "2", "--out", str(tmp_path / "r2")]) == 1
    out = capsys.readouterr().out
    assert f"replay differs: iteration 2, reward/return: archived {row['reward/return']!r}" in out
    # the replay never writes over a run, and a folder without a run is one line
    assert main(["replay", str(cfg.run_dir), "--out", str(tmp_path / "r1")]) == 2
    assert main(["replay", str(tmp_path), "--iterations", "1"]) == 2
    assert main(["replay", str(cfg.run_dir), "--iterations", "9"]) == 2
    err = capsys.readouterr().err
    assert "exists" in err and "not a run folder" in err and "--iterations must be" in err


ARCHIVED = "results/lab/study2/scan/L7/detour-grpo-outcome-s10"


@pytest.mark.slow
def test_an_archived_study2_run_replays_exactly(tmp_path, capsys):
    """CI replays the first 2 iterations of one archived study-2 run from a clean clone (issue 30): the
    7-room lab's warm start is built here from the recipe (about 1.5 minutes), then trained again."""
    from pathlib import Path

    run = Path(__file__).resolve().parents[1] / ARCHIVED
    assert (run / "fingerprint.json").is_file(), f"{run}: the archived run is missing"
    assert main(["replay", str(run), "--iterations", "2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "replay matches: iterations 0-2 of detour-grpo-outcome-s10" in out and "equal exactly" in out
