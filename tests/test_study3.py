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
