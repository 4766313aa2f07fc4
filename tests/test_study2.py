"""Study 2's registered machinery (rspo.study.study2, docs/lab/protocol-2.md): the runs each phase trains,
the premise gate's statistics and labels, and the explorer's capture in the claims."""

from __future__ import annotations

import math
import re

import pytest

from rspo.study import claims, study2


def _run(reward, seed, successes, evals, steps_per_it=100, algo="grpo", m=0.0, extra_rows=None):
    """A finished run: rollout success per iteration, greedy success at every other iteration."""
    from rspo.core.config import TrainConfig
    from rspo.study.analysis import Run

    rows = [{"iteration": 0, "rollout/env_steps": 0, "eval/success": 0.0}]
    for it, s in enumerate(successes, 1):
        row = {"iteration": it, "rollout/env_steps": it * steps_per_it, "rollout/success": s}
        if it in evals:
            row["eval/success"] = evals[it]
        row.update((extra_rows or {}).get(it, {}))
        rows.append(row)
    cfg = TrainConfig(
        env="detour", algo=algo, reward=reward, seed=seed, iterations=len(successes), misalignment=m
    )
    return Run(None, cfg, rows)


def slow_outcome(seed):  # finds its successes late, ends solving
    return _run("outcome", seed, [0.0] * 6 + [0.3, 0.7, 0.9, 0.95], {6: 0.0, 10: 0.9 + 0.01 * seed})


def drifting_dense(seed):  # solves early, then reads the map; its episodes are longer
    succ = [0.3, 0.8, 0.8, 0.6, 0.4, 0.3, 0.2, 0.2, 0.2, 0.2]
    return _run("dense", seed, succ, {6: 0.3, 10: 0.1 + 0.01 * seed}, steps_per_it=120, m=0.1)


def test_the_gate_passes_a_setting_where_outcome_is_slow_and_dense_is_biased():
    g = study2.gate([slow_outcome(s) for s in range(5)], [drifting_dense(s) for s in range(5)], boot=300)
    # equal steps: the smaller mean final steps (outcome's 1,000 against dense's 1,200); dense's
    # evaluation closest to 1,000 steps is its iteration 10 (1,200) rather than 6 (720)
    assert g["steps"] == 1000
    assert g["b"][0] == pytest.approx(0.1 + 0.02 - (0.9 + 0.02)) and g["b_label"] == "yes"
    assert g["a"][0] < 0.5 and g["a_label"] == "yes"
    assert g["reach"] == 5 and study2.gate_pass(g) is False  # 5 seeds reaching: under the 8 of 10
    assert study2.scan_pass(g)
    ten = study2.gate([slow_outcome(s) for s in range(10)], [drifting_dense(s) for s in range(10)], boot=300)
    assert study2.gate_pass(ten)


def test_a_dense_learner_that_never_reaches_fails_the_scan_and_the_gate():
    succ = [0.3, 0.2, 0.2, 0.1, 0.2, 0.1, 0.0, 0.0, 0.0, 0.0]  # moving mean at most 0.23: below 25%
    dense = [_run("dense", s, succ, {6: 0.0, 10: 0.0}, steps_per_it=120, m=0.2) for s in range(3)]
    g = study2.gate([slow_outcome(s) for s in range(3)], dense, boot=200)
    assert g["reach"] == 0 and not study2.scan_pass(g) and not study2.gate_pass(g)
    # the threshold is 25% of the moving mean: a peak of 0.3 reaches, one of 0.2 does not
    near = [0.3] * 3 + [0.0] * 7
    just = [_run("dense", 0, near, {10: 0.0}, m=0.2), _run("dense", 1, [0.2] * 10, {10: 0.0}, m=0.2)]
    assert study2.gate([slow_outcome(s) for s in range(2)], just, boot=50)["reach"] == 1
    # the moving mean over 3 iterations, not one lucky iteration
    assert study2.peak_rollout_success(_run("dense", 0, [0, 0.9, 0, 0, 0], {5: 0.0})) == pytest.approx(0.3)


def test_labels_never_call_a_straddling_interval_no():
    assert study2.a_label(0.4, 0.3, 0.5) == "yes"
    assert study2.a_label(0.6, 0.45, 0.9) == "within noise"
    assert study2.a_label(0.7, 0.55, 0.9) == "no"
    assert study2.a_label(math.nan, math.nan, math.nan) == "n/a"
    assert study2.b_label(-0.2, -0.3, -0.01) == "yes"
    assert study2.b_label(-0.2, -0.3, 0.0) == "within noise"
    assert study2.b_label(0.1, 0.01, 0.2) == "no"


def test_ranking_takes_the_most_biased_scan_passing_setting_first():
    g = {"reach": 3, "a": (0.3, 0.2, 0.4)}
    results = {
        "L7-m0.1": {**g, "b": (-0.2, -0.3, 0.0)},
        "L7-m0.15": {**g, "b": (-0.5, -0.6, -0.4)},
        "L8-m0.1": {**g, "b": (-0.1, -0.3, 0.0)},  # not biased enough for the scan
        "L8-m0.2": {**g, "reach": 1, "b": (-0.9, -1, -0.8)},  # its dense learner does not reach
    }
    assert study2.ranked(results) == ["L7-m0.15", "L7-m0.1"]


def test_each_phase_trains_the_registered_runs(tmp_path):
    scan = study2.scan_configs(tmp_path, "A")
    # per seed: one outcome run per length, one dense run per setting
    assert len(scan) == 3 * (2 + 6) and {c.seed for c in scan} == set(study2.SCAN_SEEDS)
    outcome = [c for c in scan if c.reward == "outcome"]
    assert {c.out_dir for c in outcome} == {str(tmp_path / "scan" / "L7"), str(tmp_path / "scan" / "L8")}
    assert all(c.misalignment == 0 and c.env_options in ({"length": 7}, {"length": 8}) for c in outcome)
    dense = [c for c in scan if c.reward == "dense" and c.out_dir.endswith("L8-m0.15")]
    assert [(c.misalignment, c.env_options, c.iterations, c.tasks_per_iter, c.group_size) for c in dense] == [
        (0.15, {"length": 8}, 60, 8, 4)
    ] * 3
    b = study2.find_setting("L7-m0.25-ms1")
    assert b.env_options() == {"length": 7, "milestones": 1.0} and b.env_options(with_reward=False) == {
        "length": 7
    }
    confirm = study2.confirm_configs(tmp_path, b, candidate=1)
    assert sorted({c.seed for c in confirm}) == list(range(30, 40)) and len(confirm) == 20
    runs = study2.rspo_configs(tmp_path, b)
    forms = {(c.algo, c.reward, c.swap_budget, c.iterations) for c in runs}
    assert ("grpo", "rspo", "extra", 30) in forms and ("grpo", "rspo", "matched", 60) in forms
    assert ("ppo", "outcome", "extra", 60) in forms and ("grpo", "outcome", "extra", 60) not in forms
    assert len(runs) == 10 * 2 + 2 * 5 * 4
    every = scan + confirm + runs + study2.scan_configs(tmp_path, "B")
    assert max(c.seed for c in every) < 100  # seeds 100 and above are kept for independent checks
    with pytest.raises(ValueError, match="protocol 2 registers"):
        study2.find_setting("L9-m0.1")


def _rspo(seed, handed, final):
    extra = {
        it: {"explorer/success": 0.5 if handed else 0.0, "swap/trained_successes": handed}
        for it in range(1, 11)
    }
    return _run("rspo", seed, [0.5] * 10, {10: final}, steps_per_it=200, m=0.1, extra_rows=extra)


def test_a_captured_explorer_is_counted_and_c_is_read_again_without_it():
    outcome = [slow_outcome(s) for s in range(4)]
    dense = [drifting_dense(s) for s in range(4)]
    runs = [_rspo(s, handed=2, final=1.0) for s in range(3)] + [_rspo(3, handed=0, final=0.0)]
    assert [claims.explorer_summary(r)["captured"] for r in runs] == [False] * 3 + [True]
    cell = claims.captured_cell(outcome, dense, runs, boot=200)
    assert cell.startswith("1 of 4 (seed 3); (c) without them: yes: vs outcome +")
    assert claims.captured_cell(outcome, dense, runs[:3], boot=200) == "0 of 3"
    # runs logged before swap/trained_successes: replayed turns tell for a group-relative learner only
    old = _run(
        "rspo",
        0,
        [0.5] * 3,
        {3: 0.0},
        m=0.1,
        extra_rows={it: {"explorer/success": 0.0, "swap/turns": 0} for it in (1, 2, 3)},
    )
    assert claims.explorer_summary(old)["captured"] is True
    ppo = _run(
        "rspo",
        0,
        [0.5] * 3,
        {3: 0.0},
        algo="ppo",
        m=0.1,
        extra_rows={it: {"explorer/success": 0.0, "swap/turns": 4} for it in (1, 2, 3)},
    )
    assert claims.explorer_summary(ppo)["captured"] is None
    assert claims.captured_cell(outcome, dense, [ppo], boot=50) == "not logged"


def test_the_findings_study2_block_is_the_summary_of_the_archive():
    """docs/lab/findings.md's study-2 bullets (between <!-- study2 --> markers) are what `lab_study2.py
    summary` computes from the archived runs, and the README's headline is its first line: no
    hand-written number."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    archive = root / "results" / "lab" / "study2"
    if not archive.is_dir():
        pytest.skip("needs a checkout (results/lab/study2)")
    findings = root / "docs" / "lab" / "findings.md"
    block = re.search(r"<!-- study2 -->\n(.*?)<!-- /study2 -->", findings.read_text(), re.S)
    assert block, "docs/lab/findings.md has no <!-- study2 --> block"
    summary = study2.finding_markdown(archive)
    assert block.group(1) == summary, (
        "docs/lab/findings.md's study-2 block differs from `python benchmarks/lab_study2.py summary "
        "--root results/lab/study2`: paste its output again"
    )
    assert "\n" + summary.splitlines()[0] + "\n" in (root / "README.md").read_text()


def test_archived_like_finds_the_archive_runs_of_a_quick_profile_run_at_other_seeds():
    """Notebook 00's bands: the committed study-2 runs trained exactly as the student's quick run,
    at other seeds; none for a run of another profile."""
    from rspo.study.experiments import run_config

    for reward, at_least in (("outcome", 10), ("dense", 10), ("rspo", 3)):
        cfg = run_config("quick", "detour", "grpo", reward, 21, "runs/q")
        runs = study2.archived_like(cfg)
        assert len(runs) >= at_least and all(study2.same_settings(r.config, cfg) for r in runs)
        assert 21 not in {r.config.seed for r in runs} and all(r.finished for r in runs)
    assert study2.archived_like(run_config("smoke", "detour", "grpo", "outcome", 0, "runs/q")) == []
    assert (
        study2.archived_like(run_config("quick", "detour", "grpo", "rspo", 0, "runs/q", swap_budget="extra"))
        == []
    )


def test_rspo_claims_wait_for_the_whole_phase_and_their_sentences_copy_the_table(tmp_path):
    """Protocol 2 reads the claims once the phase's 60 runs are finished: until then the summary (and so
    the README) has no RSPO line. Each sentence copies its row's verdict cells; the headline counts
    (c)'s verdicts at equal steps."""
    setting = study2.find_setting(study2.CHOSEN)
    assert len(study2.missing_rspo_runs(tmp_path, setting)) == 60
    assert study2.rspo_claims(tmp_path) == {}
    rows = [
        [
            "grpo",
            "extra",
            "10/10/10",
            "yes: 0.31",
            "yes: -12",
            "within noise: vs outcome +0",
            "yes: +25",
            "0 of 10",
        ],
        [
            "ppo",
            "matched",
            "5/5/5",
            "yes: 0.4",
            "no: +3",
            "no: vs outcome -20",
            "no: -3",
            "2 of 5 (seed 3, 4)",
        ],
    ]
    lines = study2.rspo_sentences(setting, rows)
    assert lines[0] == (
        "RSPO at L7-m0.15-ms1, where both premises hold: (c) RSPO >= both at equal steps is 1 no, "
        "1 within noise of 2 (base algorithm x RSPO form)."
    )
    assert "GRPO, extra form" in lines[1] and "(c) at equal steps within noise: vs outcome +0" in lines[1]
    assert "PPO, matched form" in lines[2] and "explorer captured: 2 of 5 (seed 3, 4)." in lines[2]


def test_the_claims_notes_say_where_outcome_sits_at_the_ceiling():
    """Why (c) cannot be a yes against outcome where outcome ends at 100%: the notes give every
    method's test success at equal steps and how many outcome seeds are at 100%."""
    _, lines, notes = study2.claims_table(study2.ARCHIVE, study2.find_setting(study2.CHOSEN), boot=200)
    assert lines and any("greedy test success at equal steps" in n for n in notes)
    for note in (n for n in notes if "equal steps" in n):
        full, n = map(int, re.search(r"outcome at 100% on (\d+) of (\d+) seeds", note).groups())
        assert ("at the ceiling" in note) == (2 * full >= n)


def test_the_summary_opens_with_rspos_headline_in_bold_once_the_phase_is_complete(monkeypatch, tmp_path):
    setting = study2.find_setting(study2.CHOSEN)
    row = [
        "grpo",
        "matched",
        "10/10/10",
        "yes: 0.31",
        "yes: -36",
        "within noise: vs outcome +0",
        "yes: +2",
        "0 of 10",
    ]
    head = ["algo", "RSPO form", "seeds o/d/r", "(a)", "(b)", "(c)", "(c) it", "captured"]
    monkeypatch.setattr(study2, "rspo_claims", lambda root, boot=2000: {setting: (head, [row], ["a note"])})
    text = study2.finding_markdown(tmp_path)
    assert text.startswith(
        "**RSPO at L7-m0.15-ms1, where both premises hold: (c) RSPO >= both at equal steps is 1 within noise of 1"
    )
    assert "| grpo | matched | 10/10/10 |" in text and "- a note" in text


def test_success_along_the_steps_is_read_linearly_between_evaluations():
    run = slow_outcome(0)  # greedy 0 at 0 and 600 steps, 0.9 at 1,000
    assert study2.success_at_steps(run, 800) == pytest.approx(0.45)
    assert study2.success_at_steps(run, 5000) == pytest.approx(0.9)  # the last evaluation's beyond it
    # area: 0 on [0, 600], then a ramp to 0.9 on [600, 1000]: 0.5 x 400 x 0.9 / 1000
    assert study2.success_area(run, 1000) == pytest.approx(0.18)
    assert study2.success_area(run, 600) == pytest.approx(0.0)


def test_the_speed_table_shows_a_method_that_gets_there_first(monkeypatch, tmp_path):
    """Post hoc (protocol 3 registers it): a method that ends level with outcome but climbs first has a
    higher mean success over [0, T]; its difference's interval lies above 0."""
    outcome = [slow_outcome(s) for s in range(6)]
    dense = [drifting_dense(s) for s in range(6)]
    fast = [_run("rspo", s, [0.5] * 10, {6: 0.8, 10: 0.9 + 0.01 * s}) for s in range(6)]
    monkeypatch.setattr(
        study2,
        "claim_groups",
        lambda root, setting, candidate=0: iter([("grpo", "matched", outcome, dense, fast)]),
    )
    head, lines = study2.speed_table(tmp_path, study2.find_setting(study2.CHOSEN), boot=300)
    (row,) = lines
    cells = dict(zip(head, row, strict=True))
    assert cells["T (steps)"] == "1,000" and cells["seeds o/d/r"] == "6/6/6"
    assert cells["at T/2: o / d / RSPO (%)"] == "0 / 21 / 67"  # 500 steps: dense 0.3 x 500/720
    o, _, r = (float(v) for v in cells["mean over [0, T]: o / d / RSPO (%)"].split(" / "))
    assert r > o
    est, low, _high = (float(v) for v in re.findall(r"[-+]?\d+", cells["RSPO - outcome (pts)"]))
    assert est == pytest.approx(r - o, abs=1) and low > 0


def test_protocol_2s_record_copies_the_claims_table_and_its_words_quote_it():
    """The record's copy of the claims (docs/lab/protocol-2.md) is the table the archive gives, and every
    interval its closing paragraph quotes is one of that table's cells."""
    from rspo.study.analysis import to_markdown

    head, lines, _ = study2.claims_table(study2.ARCHIVE, study2.find_setting(study2.CHOSEN))
    record = (study2.ARCHIVE.parents[2] / "docs" / "lab" / "protocol-2.md").read_text()
    for line in to_markdown(head, lines).strip().splitlines():
        assert "  " + line in record
    closing = record[record.rindex("By the rule registered above") :].replace("\u2212", "-")
    quoted = re.findall(r"[-+]\d+ \[[-+]\d+, [-+]\d+\]", closing)
    assert len(quoted) == 3 and all(q in to_markdown(head, lines) for q in quoted)
    verdicts = [row[5].split(":")[0] for row in lines]
    assert (verdicts.count("no"), verdicts.count("within noise"), verdicts.count("yes")) == (1, 5, 0)


def test_findings_hand_written_ceiling_sentence_holds_for_every_claims_row():
    """docs/lab/findings.md says, in prose, that where study 2's runs end "the outcome learner sits at
    100% on most seeds": every claims row's note must count more than half of its outcome seeds at 100%."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert (
        "the outcome learner sits at 100% on\nmost seeds"
        in (root / "docs" / "lab" / "findings.md").read_text()
    )
    claims = study2.rspo_claims(study2.ARCHIVE, boot=200)
    counts = [
        tuple(map(int, m.groups()))
        for _, (_, _, notes) in claims.items()
        for note in notes
        if (m := re.search(r"outcome at 100% on (\d+) of (\d+) seeds", note))
    ]
    assert len(counts) == 6 and all(2 * full > n for full, n in counts), counts
