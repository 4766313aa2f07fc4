"""Study 3's machinery (rspo.study.study3, docs/lab/protocol-3.md): its runs are study 2's at fresh seeds,
and (c') is read from each run's mean greedy test success over the baselines' budget."""

from __future__ import annotations

import pytest
from test_study2 import _run, drifting_dense, slow_outcome

from rspo.study import study2, study3


def test_the_runs_are_study_2s_at_the_fresh_seeds_40_to_49(tmp_path):
    configs = study3.configs(tmp_path)
    assert len(configs) == 40 and {c.seed for c in configs} == set(range(40, 50))
    assert all(c.algo == "grpo" for c in configs) and not any(c.seed >= 100 for c in configs)
    used = set(study2.SCAN_SEEDS) | {s for seeds in study2.CONFIRM_SEEDS for s in seeds}
    assert not used & set(study3.SEEDS)
    # each trains exactly as its study-2 counterpart (every field but seed, name and place)
    setting = study2.find_setting(study2.CHOSEN)
    twins = study2.confirm_configs(tmp_path, setting) + study2.rspo_configs(tmp_path, setting)
    for cfg in configs:
        assert any(study2.same_settings(cfg, twin) for twin in twins), cfg.name
    forms = sorted((c.swap_budget, c.iterations) for c in configs if c.reward == "rspo")
    assert forms == [("extra", 30)] * 10 + [("matched", 60)] * 10
    assert all(str(c.run_dir).startswith(str(tmp_path / "study3")) for c in configs)
    assert len(study3.missing(tmp_path)) == 40


@pytest.mark.parametrize(
    "intervals, label",
    [
        ((0.01, 0.2, 0.02, 0.3), "yes"),
        ((-0.01, 0.2, 0.02, 0.3), "within noise"),  # one interval touches 0
        ((0.01, 0.2, -0.3, -0.02), "no"),  # below dense
        ((-0.3, -0.01, 0.1, 0.2), "no"),
        ((-0.1, 0.1, -0.1, 0.1), "within noise"),
    ],
)
def test_c_prime_by_protocol_3s_rule(intervals, label):
    assert study3.c_prime(*intervals) == label


def test_the_table_reads_the_mean_success_over_the_budget(monkeypatch, tmp_path):
    outcome = [slow_outcome(s) for s in range(6)]
    dense = [drifting_dense(s) for s in range(6)]

    def fast(seed, handed):  # climbs first, ends level with outcome
        extra = {it: {"explorer/success": 0.5, "swap/trained_successes": handed} for it in range(1, 11)}
        return _run("rspo", seed, [0.5] * 10, {6: 0.8, 10: 0.9}, m=0.1, extra_rows=extra)

    matched = [fast(s, handed=0 if s == 5 else 2) for s in range(6)]
    monkeypatch.setattr(study2, "setting_runs", lambda root, phase, setting: (outcome, dense))
    monkeypatch.setattr(
        study2, "finished_runs", lambda folder, **f: matched if f["swap_budget"] == "matched" else []
    )
    head, lines = study3.table(tmp_path, boot=300)
    (row,) = lines
    cells = dict(zip(head, row, strict=True))
    assert cells["RSPO form"] == "matched (the headline)" and cells["T (steps)"] == "1,000"
    o, d, r = (float(v) for v in cells["mean success over [0, T]: o / d / RSPO (%)"].split(" / "))
    assert o == pytest.approx(100 * study2.success_area(outcome[0], 1000), abs=1)
    assert r > max(o, d) and cells["(c') RSPO above both"] == "yes"
    assert cells["explorer captured"] == "1 of 6" and cells["without captured seeds"] == "yes"


def _patched(monkeypatch, matched, extra=()):
    outcome = [slow_outcome(s) for s in range(6)]
    dense = [drifting_dense(s) for s in range(6)]
    monkeypatch.setattr(study2, "setting_runs", lambda root, phase, setting, algo="grpo": (outcome, dense))
    monkeypatch.setattr(
        study2,
        "finished_runs",
        lambda folder, **f: list(matched) if f["swap_budget"] == "matched" else list(extra),
    )
    monkeypatch.setattr(study3, "missing", lambda root: [])


def _slow(seed):  # RSPO that stays at 0.2 until the end: below both baselines early and late
    extra = {it: {"explorer/success": 0.5, "swap/trained_successes": 1} for it in range(1, 11)}
    return _run("rspo", seed, [0.2] * 10, {6: 0.2, 10: 0.2}, m=0.1, extra_rows=extra)


def test_the_headline_and_the_block_say_what_the_numbers_say(monkeypatch, tmp_path):
    _patched(monkeypatch, [_slow(s) for s in range(6)])
    (r,) = study3.results(tmp_path, boot=300)
    assert r["vs_outcome"][2] < 0 and r["label"] == "no"
    line = study3.headline(tmp_path, boot=300)
    o, d, m = (round(100 * v) for v in r["means"])
    assert "is **no**" in line and f"RSPO {m}%, outcome {o}%, dense {d}%" in line
    block = study3.finding_markdown(tmp_path, boot=300)
    assert block.startswith(line + "\n") and "| matched (the headline) |" in block
    head, rows = study3.beside_table(tmp_path, boot=300)
    (row,) = rows
    assert study3.lags(head, row) in block and study3.COMMAND in block
    # every point where RSPO's cell is below outcome's is named, and no other
    named = study3.lags(head, row).split(";")[0].removeprefix("below outcome's mean at ").split(", ")
    for name, cell in zip(study2.SPEED_NAMES, row[1:5], strict=True):
        o_, _, r_ = (float(v) for v in cell.split(" / "))
        assert (name in named) == (r_ < o_)


def test_lags_names_the_points_below_each_baseline():
    head = ["RSPO form", "at T/4", "at T/2", "at 3T/4", "at T"]
    row = ["matched", "10 / 50 / 5", "60 / 40 / 70", "80 / 90 / 85", "100 / 70 / 100"]
    assert study3.lags(head, row) == "below outcome's mean at T/4; below dense's mean at T/4, 3T/4"
    row = ["matched", "1 / 1 / 5", "1 / 1 / 5", "1 / 1 / 5", "1 / 1 / 5"]
    assert (
        study3.lags(head, row) == "below outcome's mean at none of them; below dense's mean at none of them"
    )


def test_no_verdict_is_stated_while_a_run_is_missing(tmp_path):
    line = study3.headline(tmp_path)
    assert line.startswith("Study 3 (protocol 3, seeds 40-49): 0 of 40 runs finished")
    assert not any(word in line for word in ("yes", " no ", "within noise"))
    assert study3.finding_markdown(tmp_path) == line + "\n"


def test_the_findings_study3_block_is_computed_from_the_archive():
    """docs/lab/findings.md's study-3 block (between <!-- study3 --> markers) is what `lab_study2.py
    study3 --root results/lab` prints from the archived runs, and the README quotes its headline: no
    hand-written number or verdict."""
    import re
    from pathlib import Path

    findings = Path(__file__).resolve().parents[1] / "docs" / "lab" / "findings.md"
    block = re.search(r"<!-- study3 -->\n(.*?)<!-- /study3 -->", findings.read_text(), re.S)
    assert block, "docs/lab/findings.md has no <!-- study3 --> block"
    assert block.group(1) == study3.finding_markdown(study3.ARCHIVE_ROOT), (
        "docs/lab/findings.md's study-3 block differs from `python benchmarks/lab_study2.py study3 "
        "--root results/lab`: paste its output again"
    )
    readme = findings.parents[2] / "README.md"
    assert "\n" + study3.headline(study3.ARCHIVE_ROOT) + "\n" in readme.read_text(), (
        "README: study 3's headline"
    )
