"""The claims' decision (rspo.study.claims.decide) on runs built by hand, every number worked out below
(issue 33 item 6: mutmut's survivors in ``decide`` - the fast suite never ran claim (a), the boundaries of
the verdicts, the bootstrap's resample count or the ``short`` flag)."""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import pytest
from test_analysis import fake_run

from rspo.study import claims
from rspo.study.analysis import Run


def _run(per_it: int, success: list[float], evals: dict[int, float], config=None) -> Run:
    """A finished run: iteration i (1..len(success)) at ``i * per_it`` steps with rollout success
    ``success[i-1]``; greedy test success ``evals[i]`` where given (iteration 0 is the first evaluation)."""
    rows = [{"iteration": 0, "rollout/env_steps": 0, "eval/success": evals.get(0, 0.0)}]
    for i, s in enumerate(success, start=1):
        row = {"iteration": i, "rollout/env_steps": i * per_it, "rollout/success": s}
        if i in evals:
            row["eval/success"] = evals[i]
        rows.append(row)
    return Run(Path("."), config, rows)


# Baselines: 100 steps an iteration, 12 iterations (1,200 steps); RSPO: 200 an iteration, 6 iterations
# (1,200 steps: the explorer's rollouts count). Equal iterations: iteration 6; equal steps: 1,200.
OUTCOME_SUCCESS = [0, 0, 0, 1, 1, 1] + [1] * 6  # first 6 iterations: final (last 3) 1.0, target 0.9
DENSE_SUCCESS = [0, 1, 1, 1, 1, 1] + [1] * 6


def _config(reward, seed=0, env="detour", algo="grpo", m=0.0, iterations=12):
    from rspo.core.config import TrainConfig

    return TrainConfig(env=env, algo=algo, reward=reward, seed=seed, iterations=iterations, misalignment=m)


def _outcome(config=None, **kw):
    evals = {6: 0.5, 12: 0.75, **kw.get("evals", {})}
    return _run(100, kw.get("success", OUTCOME_SUCCESS), evals, config)


def _dense(config=None):
    return _run(100, DENSE_SUCCESS, {6: 0.25, 12: 0.25}, config)


def _rspo(final: float, config=None):
    return _run(200, [0.5] * 6, {6: final}, config)


def test_decide_works_out_every_claim_from_the_runs():
    out = claims.decide([_outcome(), _outcome()], [_dense(), _dense()], [_rspo(1.0), _rspo(0.8)], boot=400)
    assert out["seeds"] == (2, 2, 2)
    # (a): over the baselines' first 6 iterations. outcome's mean curve (0 at 0 steps) rises from 0 at
    # 300 steps to 1 at 400: 0.9 at 390; dense's from 0 at 100 to 1 at 200: 0.9 at 190. Both are read on
    # a grid of 1/400 of outcome's 600 steps (1.5): 390 is on it, 190 is not - the next point is 190.5.
    # Seeds identical, so every resample gives the same ratio.
    ratio = 190.5 / 390
    assert out["a"] == pytest.approx((ratio, ratio, ratio))
    assert out["a_verdict"] == "yes"  # upper end 0.487 <= 0.5
    assert out["rspo_steps"] == 1200 and out["baseline_steps"] == 1200 and out["short"] is False
    # equal steps: the baselines' evaluation closest to 1,200 steps (iteration 12); RSPO at its last.
    # RSPO's seeds 1.0 and 0.8: resamples give 1.0, 0.9 or 0.8, so its intervals run 0.1 either side.
    steps, its = out["steps"], out["iterations"]
    assert steps["b"] == pytest.approx((-0.5, -0.5, -0.5)) and steps["b_verdict"] == "yes"
    assert steps["c_outcome"] == pytest.approx((0.15, 0.05, 0.25))
    assert steps["c_dense"] == pytest.approx((0.65, 0.55, 0.75))
    assert steps["c_verdict"] == "yes"
    # equal iterations: the baselines at iteration 6 (outcome 0.5, dense 0.25)
    assert its["b"] == pytest.approx((-0.25, -0.25, -0.25)) and its["b_verdict"] == "yes"
    assert its["c_outcome"] == pytest.approx((0.4, 0.3, 0.5))
    assert its["c_dense"] == pytest.approx((0.65, 0.55, 0.75))


def test_claim_a_is_read_over_the_baselines_first_iterations_only():
    # past iteration 6 the outcome learner falls to 0: a reading over all 12 rows would change the target
    late = [0, 0, 0, 1, 1, 1] + [0] * 6
    out = claims.decide([_outcome(success=late)] * 2, [_dense()] * 2, [_rspo(1.0)] * 2, boot=50)
    assert out["a"] == pytest.approx((190.5 / 390,) * 3)


def test_claim_a_is_not_applicable_when_the_outcome_learner_never_succeeds():
    out = claims.decide([_outcome(success=[0] * 12)] * 2, [_dense()] * 2, [_rspo(1.0)] * 2, boot=50)
    assert out["a"] is None and out["a_verdict"] == "n/a (outcome never succeeds)"
    # some success, if below 1, is still read
    half = [0, 0, 0, 0.5, 0.5, 0.5] + [
        0.5
    ] * 6  # target 0.45: outcome reaches it at 390, dense at 145 (grid: 145.5)
    out = claims.decide([_outcome(success=half)] * 2, [_dense()] * 2, [_rspo(1.0)] * 2, boot=50)
    assert out["a"] == pytest.approx((145.5 / 390,) * 3) and out["a_verdict"] == "yes"


def test_claim_a_is_computed_by_default_with_the_protocols_2000_resamples():
    params = inspect.signature(claims.decide).parameters
    assert params["boot"].default == 2000  # docs/lab/protocol.md: "resampled on their own, 2,000 times"
    out = claims.decide([_outcome()] * 2, [_dense()] * 2, [_rspo(1.0)] * 2)
    assert "a" in out and "a_verdict" in out
    assert "a" not in claims.decide([_outcome()] * 2, [_dense()] * 2, [_rspo(1.0)] * 2, boot=20, with_a=False)


def test_short_flags_baselines_that_end_before_nine_tenths_of_rspos_steps():
    def cell(baseline_its):  # the baselines' last row at baseline_its * 100 steps; RSPO ends at 1,200
        o = _run(100, OUTCOME_SUCCESS[:baseline_its], {6: 0.5, baseline_its: 0.5})
        d = _run(100, DENSE_SUCCESS[:baseline_its], {6: 0.25, baseline_its: 0.25})
        return claims.decide([o] * 2, [d] * 2, [_rspo(1.0)] * 2, boot=20, with_a=False)

    assert cell(12)["short"] is False
    # 0.9 x 1,200 = 1,080: a baseline at exactly 1,080 steps is not short; one at 1,000 is
    o = _run(100, OUTCOME_SUCCESS[:10], {6: 0.5, 10: 0.5})
    o.rows[-1]["rollout/env_steps"] = 1080
    d = _run(100, DENSE_SUCCESS[:10], {6: 0.25, 10: 0.25})
    d.rows[-1]["rollout/env_steps"] = 1080
    out = claims.decide([o] * 2, [d] * 2, [_rspo(1.0)] * 2, boot=20, with_a=False)
    assert out["baseline_steps"] == 1080 and out["short"] is False
    assert cell(10)["short"] is True and cell(10)["baseline_steps"] == 1000


class _Intervals:
    """A stand-in for claims.bootstrap that hands out the intervals given, in decide's order ((a), then
    per view (b), (c) vs outcome, (c) vs dense), and records the resample count each call asked for."""

    def __init__(self, a, b, c1, c2):
        self.queue = ([a] if a is not None else []) + [b, c1, c2] * 2
        self.boots: list[int] = []

    def __call__(self, stat, groups, boot=2000, seed=0):
        self.boots.append(boot)
        return self.queue.pop(0)


FLAT = (0.0, -0.1, 0.1)


@pytest.mark.parametrize(
    ("a", "verdict"),
    [
        ((0.3, 0.2, 0.5), "yes"),  # the upper end at 0.5 exactly
        ((0.5, 0.3, 0.8), "within noise"),  # the estimate at 0.5 exactly
        ((0.3, 0.51, 0.9), "within noise"),
        ((0.6, 0.4, 0.9), "no"),  # the low end under 0.5 does not make it noise
        ((1.0, 0.3, 2.0), "no"),
    ],
)
def test_claim_a_verdict_boundaries(monkeypatch, a, verdict):
    fake = _Intervals(a, FLAT, FLAT, FLAT)
    monkeypatch.setattr(claims, "bootstrap", fake)
    out = claims.decide([_outcome()] * 2, [_dense()] * 2, [_rspo(1.0)] * 2, boot=7)
    assert out["a"] == a and out["a_verdict"] == verdict
    assert fake.boots == [7] * 7  # every interval with the resamples asked for


@pytest.mark.parametrize(
    ("b", "verdict"),
    [
        ((-0.5, -0.6, -0.01), "yes"),
        ((-0.5, -0.6, 0.0), "within noise"),  # the upper end at 0 exactly
        ((0.5, 0.0, 0.8), "within noise"),  # the low end at 0 exactly
        ((0.5, 0.2, 0.8), "no"),
        ((0.5, 0.9, 1.2), "no"),
    ],
)
def test_claim_b_verdict_boundaries(monkeypatch, b, verdict):
    monkeypatch.setattr(claims, "bootstrap", _Intervals(None, b, FLAT, FLAT))
    out = claims.decide([_outcome()] * 2, [_dense()] * 2, [_rspo(1.0)] * 2, boot=5, with_a=False)
    assert out["steps"]["b"] == b and out["steps"]["b_verdict"] == verdict
    assert out["iterations"]["b_verdict"] == verdict


@pytest.mark.parametrize(
    ("c1", "c2", "verdict"),
    [
        ((0.2, 0.1, 0.3), (0.1, 0.05, 0.2), "yes"),
        ((0.2, 0.1, 0.3), (0.1, -0.05, 0.2), "within noise"),  # vs dense straddles 0
        ((0.2, 0.1, 0.3), (0.1, 0.0, 0.2), "within noise"),  # vs dense's low end at 0 exactly
        ((0.2, 0.0, 0.3), (0.1, 0.05, 0.2), "within noise"),
        ((0.2, 0.1, 0.3), (-0.2, -0.3, -0.1), "no"),
        ((-0.2, -0.3, -0.1), (0.2, 0.1, 0.3), "no"),
        ((0.2, 0.1, 0.3), (-0.1, -0.2, 0.0), "within noise"),  # the upper end at 0 exactly
    ],
)
def test_claim_c_verdict_boundaries(monkeypatch, c1, c2, verdict):
    monkeypatch.setattr(claims, "bootstrap", _Intervals(None, FLAT, c1, c2))
    out = claims.decide([_outcome()] * 2, [_dense()] * 2, [_rspo(1.0)] * 2, boot=5, with_a=False)
    assert (out["steps"]["c_outcome"], out["steps"]["c_dense"]) == (c1, c2)
    assert out["steps"]["c_verdict"] == verdict == out["iterations"]["c_verdict"]


def test_an_interval_from_seeds_that_differ():
    # outcome's seeds at 1,200 steps: 0.75 and 0.25. dense - outcome = 0.25 - 0.5; a resample of outcome
    # is both 0.75 (-0.5), both 0.25 (0.0) or one each (-0.25): the interval reaches 0, within noise
    out = claims.decide([_outcome(), _outcome(evals={12: 0.25})], [_dense()] * 2, [_rspo(1.0)] * 2, boot=400)
    assert out["steps"]["b"] == pytest.approx((-0.25, -0.5, 0.0))
    assert out["steps"]["b_verdict"] == "within noise"


def test_decide_without_boot_uses_2000_resamples():
    # ten outcome seeds that all differ: 2,000 and 2,001 resamples end on other percentiles
    outcome = [_outcome(evals={12: 0.05 * k + 0.003 * k * k}) for k in range(10)]
    default = claims.decide(outcome, [_dense()] * 2, [_rspo(1.0), _rspo(0.8)], with_a=False)
    assert default == claims.decide(outcome, [_dense()] * 2, [_rspo(1.0), _rspo(0.8)], 2000, with_a=False)
    assert default != claims.decide(outcome, [_dense()] * 2, [_rspo(1.0), _rspo(0.8)], 2001, with_a=False)


def _cell(env="detour", algo="grpo", m=0.0, rspo_finals=(1.0, 0.8)):
    """Two seeds each of outcome (at m = 0), dense and RSPO runs of the fixture above, named as the
    claims table reads them."""
    runs = [_outcome(_config("outcome", s, env, algo)) for s in range(2)]
    runs += [_dense(_config("dense", s, env, algo, m)) for s in range(2)]
    return runs + [_rspo(f, _config("rspo", s, env, algo, m, 6)) for s, f in enumerate(rspo_finals)]


def test_the_claims_table_line_at_m0_word_for_word(monkeypatch):
    boots = []
    real = claims.bootstrap
    monkeypatch.setattr(
        claims, "bootstrap", lambda stat, groups, boot=2000: boots.append(boot) or real(stat, groups, boot)
    )
    runs = _cell()
    for handed, run in zip((0, 1), runs[4:], strict=True):  # seed 0's explorer handed nothing over
        for row in run.rows[1:]:
            row.update({"explorer/success": 0.5, "swap/trained_successes": handed})
    head, lines = claims.claims_table(runs, boot=400)
    assert head == [
        "env",
        "m",
        "algo",
        "seeds o/d/r",
        "(a) outcome slow",
        "(b) dense biased",
        "(c) RSPO >= both",
        "(c) at equal iterations",
        "explorer captured",
    ]
    # the numbers of test_decide_works_out_every_claim_from_the_runs, in points; without the captured
    # seed 0, RSPO is seed 1 alone (0.8 at its end)
    assert lines == [
        [
            "detour",
            "0",
            "grpo",
            "2/2/2",
            "yes: 0.49 [0.49, 0.49]",
            "yes: -50 [-50, -50]",
            "yes: vs outcome +15 [+5, +25], vs dense +65 [+55, +75]",
            "yes: vs outcome +40 [+30, +50], vs dense +65 [+55, +75]",
            "1 of 2 (seed 0); (c) without them: yes: vs outcome +5 [+5, +5], vs dense +55 [+55, +55]",
        ]
    ]
    assert boots == [400] * 13  # 7 for the line, 6 for (c) again without the captured seed
    runs = _cell()
    for run in runs[2:4]:  # dense at 0 by the end: (b) at equal steps -75 points
        run.rows[-1]["eval/success"] = 0.0
    _, lines = claims.claims_table(runs, boot=50)
    assert lines[0][5] == "yes: -75 [-75, -75]" and lines[0][8] == "not logged"


def test_the_claims_table_at_another_m_leaves_claim_a_to_m0_and_flags_short_baselines():
    runs = [r for r in _cell(m=0.1) if r.config.reward != "outcome"] + [
        _outcome(_config("outcome", s)) for s in range(2)
    ]  # the outcome learner's m = 0 runs serve m = 0.1
    for r in runs:
        if r.config.reward != "rspo":
            r.rows[-1]["rollout/env_steps"] = 1000  # 83% of RSPO's 1,200
    _, lines = claims.claims_table(runs, boot=50)
    assert [line[:5] for line in lines] == [["detour", "0.1", "grpo", "2/2/2", "n/a: decided at m = 0"]]
    assert lines[0][5] == "yes: -50 [-50, -50] [baselines end at 83% of RSPO's steps]"


def test_claim_a_cell_when_the_outcome_learner_never_succeeds():
    runs = _cell()
    for r in runs[:2]:
        for row in r.rows[1:]:
            row["rollout/success"] = 0.0
    _, lines = claims.claims_table(runs, boot=50)
    assert lines[0][4] == "n/a (outcome never succeeds)"


def test_the_claims_table_orders_env_then_m_then_the_algorithms_as_given():
    runs = []
    for env, algo in [
        ("shop", "grpo"),
        ("detour", "turn_level"),
        ("detour", "gigpo"),
        ("detour", "rloo"),
        ("detour", "ppo"),
        ("detour", "grpo"),
    ]:
        runs += _cell(env, algo)
    runs += _cell("detour", "grpo", 0.1)[2:]
    _, lines = claims.claims_table(runs, boot=20)
    assert [tuple(line[:3]) for line in lines] == [
        ("detour", "0", "grpo"),
        ("detour", "0", "ppo"),
        ("detour", "0", "gigpo"),
        ("detour", "0", "rloo"),  # algorithms outside the order: by name
        ("detour", "0", "turn_level"),
        ("detour", "0.1", "grpo"),
        ("shop", "0", "grpo"),
    ]
    _, lines = claims.claims_table(runs, boot=20, algos=("gigpo", "grpo"))
    assert [line[2] for line in lines[:5]] == ["gigpo", "grpo", "ppo", "rloo", "turn_level"]


# --- the helpers' edges ------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", ["claims_table", "ablation_table", "captured_cell", "decide"])
def test_every_default_resample_count_is_the_protocols_2000(monkeypatch, fn):
    """Notebook 05 and the report call claims_table without a count: each function's default is 2,000."""
    from dataclasses import replace

    boots = []
    real = claims.bootstrap
    monkeypatch.setattr(
        claims, "bootstrap", lambda stat, groups, boot=2000: boots.append(boot) or real(stat, groups, 5)
    )
    runs = _cell()
    outcome, dense, rspo = runs[:2], runs[2:4], runs[4:]
    for row in rspo[0].rows[1:]:  # seed 0's explorer handed nothing over: captured_cell decides (c) again
        row.update({"explorer/success": 0.5, "swap/trained_successes": 0})
    for row in rspo[1].rows[1:]:
        row.update({"explorer/success": 0.5, "swap/trained_successes": 1})
    if fn == "claims_table":
        claims.claims_table(runs)
    elif fn == "ablation_table":
        claims.ablation_table(
            runs
            + [
                replace(r, config=replace(r.config, name=f"detour-grpo-rspo-x=1-s{i}"))
                for i, r in enumerate(rspo)
            ]
        )
    elif fn == "captured_cell":
        claims.captured_cell(outcome, dense, rspo)
    else:
        claims.decide(outcome, dense, rspo)
    assert boots and set(boots) == {2000}


def test_the_bootstraps_default_resample_count_is_2000():
    vals = [0.05 * k + 0.003 * k * k for k in range(10)]
    call = lambda *boot: claims.bootstrap(claims._mean_diff, [vals, [0.0, 0.5]], *boot)  # noqa: E731
    assert call() == call(2000) != call(2001)


def test_bootstrap_takes_the_2_5_and_97_5_percentiles_of_the_resamples():
    import random

    vals = [0.0, 1.0, 3.0]
    for boot in (1, 2, 3, 40):
        rng = random.Random(0)
        means = sorted(sum(rng.choice(vals) for _ in vals) / 3 for _ in range(boot))
        got = claims.bootstrap(lambda g: sum(g) / len(g), [vals], boot)
        assert got == (4 / 3, means[int(0.025 * boot)], means[int(0.975 * boot)]), boot


def test_verdict_at_its_thresholds():
    # an interval that touches the value from the right side is not clear of it
    assert claims.verdict(0.0, 1.0, 0.5, above=0.0) == "within noise"
    assert claims.verdict(-1.0, 0.0, -0.5, above=0.0) == "no"
    assert claims.verdict(0.0, 0.5, 0.2, below=0.5) == "within noise"
    assert claims.verdict(0.5, 0.9, 0.7, below=0.5) == "no"


def test_interp_at_a_step_takes_the_value_before_it():
    # the curve jumps from 0 to 1 at x = 10 (two points there): at 10 it is still 0, just after it 1
    xs, ys = [0.0, 10.0, 10.0, 20.0], [0.0, 0.0, 1.0, 1.0]
    assert claims.interp(xs, ys, 10.0) == 0.0 and claims.interp(xs, ys, 10.5) == 1.0
    assert claims.interp(xs, ys, 0.0) == 0.0 and claims.interp([5.0, 6.0], [2.0, 4.0], 5.0) == 2.0


def test_curve_starts_at_zero_steps_with_the_first_value():
    run = _run(100, [0.25, 0.5, 1.0], {})
    assert claims.curve(run, "rollout/success") == ([0.0, 100, 200, 300], [0.25, 0.25, 0.5, 1.0])


def test_final_is_the_mean_of_the_last_three_rows():
    run = _run(100, [0.0, 0.0, 0.5, 0.25, 1.0], {})
    assert claims.final(run, "rollout/success") == pytest.approx((0.5 + 0.25 + 1.0) / 3)
    assert claims.final(run, "rollout/success", last=1) == 1.0


def test_eval_at_equal_steps_never_reads_the_first_evaluation():
    run = _run(100, [0.0, 0.0, 0.0], {0: 0.9, 1: 0.1, 2: 0.2, 3: 0.3})
    assert claims.eval_at(run, steps=0) == 0.1  # iteration 1, the closest trained one
    assert claims.eval_at(run, steps=190) == 0.2 and claims.eval_at(run, iteration=3) == 0.3


def test_p1_ratio_edges():
    never = _run(100, [0.0] * 6, {})
    assert math.isnan(claims.p1_ratio([never], [_run(100, [1.0] * 6, {})]))
    # dense already at the target from its first row: the first grid point, 600/400 = 1.5 steps
    outcome = _run(100, OUTCOME_SUCCESS[:6], {})
    assert claims.p1_ratio([outcome], [_run(100, [1.0] * 6, {})]) == pytest.approx(1.5 / 390)
    # the grid ends at twice outcome's steps (1,200): a dense curve that reaches 0.9 at 1,201.5 never does
    late = _run(100, [0.0] * 12, {})
    late.rows.append({"iteration": 13, "rollout/env_steps": 1201.5, "rollout/success": 0.9})
    assert math.isinf(claims.p1_ratio([outcome], [late]))
    late.rows[-1]["rollout/env_steps"] = 1200
    assert claims.p1_ratio([outcome], [late]) == pytest.approx(1200 / 390)


def _explorer_run(algo, rows, seed=0):
    run = _run(
        100, [0.0] * len(rows), {len(rows): 0.0}, _config("rspo", seed, algo=algo, iterations=len(rows))
    )
    for row, extra in zip(run.rows[1:], rows, strict=True):
        row.update(extra)
    return run


def test_explorer_summary_reads_every_logged_mean_and_the_old_logs_handed_count():
    rows = [
        {
            "explorer/success": 0.5,
            "swap/turns": 1,
            "swap/tokens": 10,
            "swap/is_ratio_mean": 0.8,
            "swap/is_weight_mean": 0.6,
            "swap/truncated_frac": 0.1,
            "swap/success_group_frac": 0.25,
        },
        {
            "explorer/success": 1.0,
            "swap/turns": 0,
            "swap/tokens": 0,
            "swap/is_ratio_mean": 1.2,
            "swap/is_weight_mean": 1.0,
            "swap/truncated_frac": 0.3,
            "swap/success_group_frac": 0.75,
        },
        {
            "explorer/success": 0.0,
            "swap/turns": 3,
            "swap/tokens": 20,
            "swap/is_ratio_mean": 1.0,
            "swap/is_weight_mean": 0.8,
            "swap/truncated_frac": 0.2,
            "swap/success_group_frac": 0.5,
        },
    ]  # logged before swap/trained_successes: a group-relative learner's handed count is the
    # updates that trained replayed turns (2 of 3: one of them only a single turn)
    s = claims.explorer_summary(_explorer_run("grpo", rows))
    assert s == pytest.approx(
        {
            "explorer_success": 0.5,
            "explorer_peak": 1.0,
            "handed": 2,
            "captured": False,
            "success_group_frac": 0.5,
            "turns": 4 / 3,
            "tokens": 10.0,
            "is_ratio_mean": 1.0,
            "is_weight_mean": 0.8,
            "truncated_frac": 0.2,
        }
    )
    assert claims.explorer_summary(_explorer_run("ppo", rows))["handed"] is None  # a critic's: not logged
    none = [{**r, "swap/turns": 0} for r in rows]
    assert claims.explorer_summary(_explorer_run("grpo", none))["captured"] is True


def test_by_reward_skips_unfinished_and_renamed_runs_but_keeps_reading():
    from dataclasses import replace

    runs = _cell()
    unfinished = replace(runs[0], rows=runs[0].rows[:-1])
    renamed = replace(runs[1], config=replace(runs[1].config, name="mine"))
    groups = claims.by_reward([unfinished, renamed] + runs[2:])
    assert {k: len(v) for k, v in groups[("detour", "grpo", 0.0)].items()} == {"dense": 2, "rspo": 2}


def test_baselines_fall_back_to_the_m0_outcome_runs_and_give_empty_lists():
    runs = _cell()
    groups = claims.by_reward(runs)
    assert claims.baselines({}, "detour", "grpo", 0.1) == ([], [], [])
    assert claims.baselines(groups, "detour", "grpo", 0.3) == (runs[:2], [], [])
    own = [_outcome(_config("outcome", s, m=0.3)) for s in range(2)]  # an m's own outcome runs come first
    groups = claims.by_reward(runs + own)
    assert claims.baselines(groups, "detour", "grpo", 0.3) == (own, [], [])
    assert claims.baselines({("detour", "grpo", 0.3): {}}, "detour", "grpo", 0.3) == ([], [], [])


def test_captured_cell_names_the_captured_seeds_and_decides_c_without_them(monkeypatch):
    rspo = []
    for seed, handed in ((3, 0), (5, 0), (7, 1), (8, 2)):
        run = _rspo(1.0 if seed < 8 else 0.8, _config("rspo", seed, iterations=6))
        for row in run.rows[1:]:
            row.update({"explorer/success": 0.5, "swap/trained_successes": handed})
        rspo.append(run)
    boots = []
    real = claims.bootstrap
    monkeypatch.setattr(
        claims, "bootstrap", lambda stat, groups, boot=2000: boots.append(boot) or real(stat, groups, boot)
    )
    cell = claims.captured_cell([_outcome()] * 2, [_dense()] * 2, rspo, 30)
    assert cell == (
        "2 of 4 (seed 3, 5); (c) without them: yes: vs outcome +15 [+5, +25], vs dense +65 [+55, +75]"
    )
    assert set(boots) == {30}


def test_ablation_table_word_for_word(monkeypatch):
    from dataclasses import replace

    def variant(change, finals, m=0.0, env="detour"):
        runs = [_rspo(f, _config("rspo", s, env=env, m=m, iterations=6)) for s, f in enumerate(finals)]
        return [
            replace(r, config=replace(r.config, name=f"{env}-grpo-rspo-{change}-s{s}"))
            for s, r in enumerate(runs)
        ]

    base = [_outcome(_config("outcome", s)) for s in range(2)] + [
        _dense(_config("dense", s)) for s in range(2)
    ]
    unfinished = variant("b=1", (1.0,))[0]
    unfinished = replace(unfinished, rows=unfinished.rows[:-1])
    runs = base + variant("b=1", (1.0, 0.8)) + variant("a=1", (0.5, 0.5), env="alfworld") + [unfinished]
    runs += variant("nodense=1", (1.0, 1.0), m=0.2)  # its m has no dense runs: no row
    boots = []
    real = claims.bootstrap
    monkeypatch.setattr(
        claims, "bootstrap", lambda stat, groups, boot=2000: boots.append(boot) or real(stat, groups, boot)
    )
    head, lines = claims.ablation_table(runs, 40)
    assert head == [
        "env",
        "m",
        "algo",
        "variant",
        "seeds",
        "steps",
        "(c) variant >= both",
        "variant - RSPO (equal its)",
    ]
    assert lines == [
        [
            "detour",
            "0",
            "grpo",
            "b=1",
            "2",
            "1,200",
            "yes: vs outcome +15 [+5, +25], vs dense +65 [+55, +75]",
            "",
        ],
    ]
    # against RSPO's default runs of the cell, at the variant's last iteration
    runs += [_rspo(f, _config("rspo", s, iterations=6)) for s, f in enumerate((0.5, 0.7))]
    _, lines = claims.ablation_table(runs, 40)
    # variant 1.0 and 0.8, RSPO 0.5 and 0.7 at iteration 6: +30 points, the interval from the bootstrap
    expected = claims.fmt(real(claims._mean_diff, [[1.0, 0.8], [0.5, 0.7]], 40), 0, 100)
    assert expected.startswith("+30 [") and lines[0][-1] == f"{expected} (2 seeds)"
    assert set(boots) == {40}


def test_ablation_groups_take_finished_runs_named_as_ablations_only():
    from dataclasses import replace

    run = _rspo(1.0, _config("rspo", 0, iterations=6))
    named = lambda n: replace(run, config=replace(run.config, name=n))  # noqa: E731
    groups = claims.ablation_groups(
        [
            run,
            named("detour-grpo-rspo-c=2-s0"),
            named("mine-s0"),
            named("detour-grpo-rspo-c=2"),
            replace(named("detour-grpo-rspo-d=1-s0"), rows=run.rows[:-1]),
        ]
    )
    assert list(groups) == [("detour", "grpo", 0.0, "c=2")]


def test_run_story_word_for_word():
    """Notebook 00's sentences, whole: each case below changes one word or number of them."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from test_claims import _story_rows, _story_run

    outcome = _story_run("outcome", _story_rows([0, 0, 0.5, 0.5, 1.0]))
    dense = _story_run(
        "dense", _story_rows([0.5, 0.5, 0.5, 0.2, 0.2], eval_at=0.25, process=[0.3, 0.5, 0.9, 1.2, 1.4])
    )
    rspo = _story_run(
        "rspo",
        _story_rows([0, 0, 0, 0.5, 1.0], explorer=[0.25, 0.5, 0.75, 1.0, 1.0], handed=[0, 2, 3, 1, 0]),
    )
    reached = "its own rollouts first won 25% of episodes (a 3-iteration mean) after {} environment steps"
    assert claims.run_story({"outcome": outcome, "dense": dense, "rspo": rspo}) == [
        f"The outcome learner: {reached.format(400)}; its greedy test success went from 0% to 100%.",
        f"The dense learner: {reached.format(100)}; its greedy test success went from 0% to 25%. Its process "
        "return per episode (what the dense reward pays) rose from 0.30 to 1.40.",
        f"RSPO's learner: {reached.format(500)}; its greedy test success went from 0% to 100%.",
        "Its explorer, paid the dense reward, won 70% of its episodes on average (peak 100%) and offered 20 "
        "winning episodes; the learner's updates trained on 6 of them, relabelled with the outcome reward "
        "(mean importance weight after truncation 0.50).",
        "For its first 3 iterations the learner's own rollouts won nothing while its explorer already won up "
        "to 75%: a group-relative learner learns from a group only when it holds a win and a loss, so until "
        "its own samples win, only the explorer's replayed episodes move it.",
    ]
    # a peak 10 points or more above the end is named; the end is the last evaluation; steps of the last row
    peaked = _story_run("outcome", _story_rows([0.0, 0.0, 0.0], eval_at=0.4))
    peaked.rows[1]["eval/success"] = 0.5
    assert claims.run_story({"my-mode": peaked}) == [
        "my-mode: its own rollouts never won 25% of episodes in its 300 environment steps; its greedy test "
        "success went from 0% to 40% (its peak: 50%)."
    ]
    peaked.rows[-1]["eval/success"] = 0.41  # 9 points under the peak: not named
    assert "peak" not in claims.run_story({"outcome": peaked})[0]
    # an RSPO run without explorer rows says nothing more, and the runs after it are still told
    plain = _story_run("rspo", _story_rows([0.0, 0.5]))
    flat = _story_run("dense", _story_rows([0.5, 0.5, 0.5], process=[0.7, 0.2, 0.7]))
    one = _story_run("dense", _story_rows([0.5], process=[0.7]))
    lines = claims.run_story({"rspo": plain, "dense": flat})
    assert len(lines) == 2 and lines[1].endswith("stayed from 0.70 to 0.70.")
    assert "process return" not in claims.run_story({"dense": one})[0]
    # a critic's run logged before swap/trained_successes: what it handed over is not told; one iteration
    # at zero, or an explorer that won nothing meanwhile, gets no sentence about the wait
    legacy = _story_run(
        "rspo", _story_rows([0.0, 0.5, 0.5], explorer=[0.5, 0.5, 0.5], handed=[1, 1, 1]), algo="ppo"
    )
    for row in legacy.rows[1:]:
        del row["swap/trained_successes"], row["swap/successes"]
    assert claims.run_story({"rspo": legacy})[1:] == [
        "Its explorer, paid the dense reward, won 50% of its episodes on average (peak 50%) and offered 0 "
        "winning episodes."
    ]
    idle = _story_run("rspo", _story_rows([0.0, 0.0, 0.5], explorer=[0.0, 0.0, 0.5], handed=[0, 0, 1]))
    assert len(claims.run_story({"rspo": idle})) == 2
    early = _story_run("rspo", _story_rows([0.5, 0.5], explorer=[0.5, 0.5], handed=[1, 1]))
    assert len(claims.run_story({"rspo": early})) == 2  # the learner won from its first iteration
    # the direction is the last value against the first, whatever lies between
    wave = _story_run("dense", _story_rows([0.5, 0.5, 0.5], process=[0.5, 0.9, 0.4]))
    assert claims.run_story({"dense": wave})[0].endswith("fell from 0.50 to 0.40.")
    wave = _story_run("dense", _story_rows([0.5, 0.5, 0.5, 0.5], process=[0.5, 0.2, 0.9, 0.6]))
    assert claims.run_story({"dense": wave})[0].endswith("rose from 0.50 to 0.60.")
    # an explorer that handed nothing over, word for word
    captured = _story_run("rspo", _story_rows([0.0, 0.0, 0.0], explorer=[0.5] * 3, handed=[0, 0, 0]))
    assert claims.run_story({"rspo": captured})[1] == (
        "Its explorer, paid the dense reward, won 50% of its episodes on average (peak 50%) and offered 12 "
        "winning episodes; the learner's updates trained on none of them (the explorer handed over "
        "nothing): the learner learned from its own outcome rewards only, as GRPO does."
    )


def test_lab_runs_read_each_m_folder_from_its_lab_subfolder_or_itself(tmp_path):
    """``lab_runs`` (notebook 05 and the exercises' premise gaps read the committed lab logs with it):
    ``m<m>/lab/`` where a fresh run put it (a run lying beside it in ``m<m>/`` is not read), ``m<m>/``
    itself for archived logs, folders not named ``m*`` ignored, every m's runs in the folders' order."""
    fake_run(tmp_path / "m0" / "lab", 0, 0.5, reward="outcome", misalignment=0.0)
    fake_run(tmp_path / "m0", 1, 0.5, reward="outcome", misalignment=0.0)  # beside lab/: not read
    # archived: the logs in m0.5/ itself
    fake_run(tmp_path / "m0.5", 2, 0.5, reward="dense", misalignment=0.5)
    fake_run(tmp_path / "other", 3, 0.5, reward="dense", misalignment=0.5)  # not an m folder
    got = [(r.config.reward, r.config.seed, r.config.misalignment) for r in claims.lab_runs(tmp_path)]
    assert got == [("outcome", 0, 0.0), ("dense", 2, 0.5)]
    assert claims.lab_runs(str(tmp_path / "m0")) == []  # a string root; no m folder under it
