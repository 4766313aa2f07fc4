"""The premise and claim checks' arithmetic (rspo.study.claims, benchmarks/lab_premises.py): interpolation,
first reach, bootstrap, verdicts."""

from __future__ import annotations

import pytest

from rspo.study import claims as lp


class FakeRun:
    def __init__(self, steps, success):
        self.rows = [
            {"rollout/env_steps": s, "rollout/success": v} for s, v in zip(steps, success, strict=True)
        ]


def test_interp_is_linear_between_points_and_flat_beyond():
    xs, ys = [0.0, 10.0, 20.0], [0.0, 1.0, 1.0]
    assert lp.interp(xs, ys, 5.0) == pytest.approx(0.5)
    assert lp.interp(xs, ys, -1.0) == 0.0 and lp.interp(xs, ys, 99.0) == 1.0


def test_first_reach_uses_the_mean_curve_against_steps():
    fast = FakeRun([10, 20, 30], [0.0, 1.0, 1.0])
    slow = FakeRun([10, 20, 30], [0.0, 0.0, 1.0])
    grid = [float(x) for x in range(1, 31)]
    assert lp.first_reach([fast], "rollout/success", 1.0, grid) == 20.0
    assert lp.first_reach([fast, slow], "rollout/success", 1.0, grid) == 30.0
    assert lp.first_reach([slow], "rollout/success", 2.0, grid) == float("inf")


def test_bootstrap_interval_contains_the_estimate_and_is_zero_width_without_spread():
    est, low, high = lp.bootstrap(lambda g: sum(g) / len(g), [[1.0, 2.0, 3.0, 4.0]], 500)
    assert low <= est <= high and low < high
    assert lp.bootstrap(lambda g: sum(g) / len(g), [[2.0, 2.0]], 100) == (2.0, 2.0, 2.0)


def test_verdicts():
    assert lp.verdict(0.1, 0.4, 0.3, below=0.5) == "holds"
    assert lp.verdict(0.1, 0.7, 0.3, below=0.5) == "within noise"
    assert lp.verdict(0.6, 0.9, 0.7, below=0.5) == "no"
    assert lp.verdict(1.0, 5.0, 3.0, above=0.0) == "holds"
    assert lp.verdict(-1.0, 5.0, 3.0, above=0.0) == "within noise"
    # an interval that straddles its threshold is within noise, wherever the estimate lies
    assert lp.verdict(0.45, 0.9, 0.7, below=0.5) == "within noise"
    assert lp.verdict(-1.0, 5.0, -0.5, above=0.0) == "within noise"
    assert lp.verdict(-5.0, -1.0, -3.0, above=0.0) == "no"


def test_bootstrap_skips_resamples_where_the_statistic_is_undefined():
    est, low, high = lp.bootstrap(
        lambda g: float("nan") if 0.0 in g else sum(g) / len(g), [[0.0, 1.0, 2.0]], 400
    )
    assert (
        low == low and high == high and 1.0 <= low <= high <= 2.0
    )  # finite, from the defined resamples only


def _run(env, algo, reward, seed, rows, m=0.0):
    from rspo.core.config import TrainConfig
    from rspo.study.analysis import Run

    cfg = TrainConfig(
        env=env, algo=algo, reward=reward, seed=seed, iterations=rows[-1]["iteration"], misalignment=m
    )
    return Run(None, cfg, rows)


def _rows(successes, steps_per_it=100, final_eval=None):
    rows = [{"iteration": 0, "eval/success": 0.0}]
    for it, s in enumerate(successes, 1):
        rows.append({"iteration": it, "rollout/env_steps": it * steps_per_it, "rollout/success": s})
    rows[-1]["eval/success"] = final_eval
    return rows


def test_claims_table_reads_a_clear_win_and_a_clear_bias_and_uses_m0_outcome_runs_at_every_m():
    outcome = [
        _run("detour", "grpo", "outcome", s, _rows([0, 0, 0.2, 0.5], final_eval=0.5 + 0.01 * s))
        for s in range(4)
    ]
    dense = [
        _run("detour", "grpo", "dense", s, _rows([0.5, 0.5, 0.5, 0.5], final_eval=0.1 + 0.01 * s), m=0.1)
        for s in range(4)
    ]
    rspo = [
        _run("detour", "grpo", "rspo", s, _rows([0.3, 0.6, 0.9, 1.0], 200, final_eval=0.9 + 0.01 * s), m=0.1)
        for s in range(4)
    ]
    head, lines = lp.claims_table(outcome + dense + rspo, boot=200)
    assert len(lines) == 1 and lines[0][:4] == ["detour", "0.1", "grpo", "4/4/4"]
    b, c = lines[0][head.index("(b) dense biased")], lines[0][head.index("(c) RSPO >= both")]
    assert b.startswith("yes: -40") and "baselines end at 50% of RSPO's steps" in b
    assert c.startswith("yes: vs outcome +40") and "vs dense +80" in c
    rspo_worse = [
        _run("detour", "grpo", "rspo", s, _rows([0, 0, 0, 0], 200, final_eval=0.0), m=0.1) for s in range(4)
    ]
    _, lines = lp.claims_table(outcome + dense + rspo_worse, boot=200)
    assert lines[0][6].startswith("no:")


def test_ablation_table_reads_each_variant_against_outcome_dense_and_rspos_default():
    from dataclasses import replace

    outcome = [
        _run("detour", "grpo", "outcome", s, _rows([0, 0, 0.2, 0.5], final_eval=0.5 + 0.01 * s))
        for s in range(4)
    ]
    dense = [
        _run("detour", "grpo", "dense", s, _rows([0.5] * 4, final_eval=0.1 + 0.01 * s), m=0.1)
        for s in range(4)
    ]
    rspo = [
        _run("detour", "grpo", "rspo", s, _rows([0.3] * 4, 200, final_eval=0.6 + 0.01 * s), m=0.1)
        for s in range(4)
    ]

    def variant(change, final):
        runs = [
            _run("detour", "grpo", "rspo", s, _rows([0.3] * 4, 200, final_eval=final + 0.01 * s), m=0.1)
            for s in range(3)
        ]
        return [
            replace(r, config=replace(r.config, name=f"detour-grpo-rspo-{change}-s{r.config.seed}"))
            for r in runs
        ]

    good, bad = variant("swap_c=2.0", 0.9), variant("swap_variant=mixed", 0.0)
    head, lines = lp.ablation_table(outcome + dense + rspo + good + bad, boot=200)
    by_change = {line[head.index("variant")]: line for line in lines}
    assert set(by_change) == {"swap_c=2.0", "swap_variant=mixed"}  # the default RSPO runs are no ablation
    win = by_change["swap_c=2.0"]
    assert win[head.index("seeds")] == "3" and win[head.index("m")] == "0.1"
    assert win[head.index("(c) variant >= both")].startswith("yes: vs outcome +40")
    assert win[head.index("variant - RSPO (equal its)")].startswith("+30") and "(4 seeds)" in win[-1]
    loss = by_change["swap_variant=mixed"]
    assert loss[head.index("(c) variant >= both")].startswith("no:")
    assert loss[head.index("variant - RSPO (equal its)")].startswith("-60")


def _story_run(reward, rows, algo="grpo"):
    from pathlib import Path

    from rspo.core.config import TrainConfig
    from rspo.study.analysis import Run

    return Run(Path("x"), TrainConfig(env="detour", algo=algo, reward=reward, iterations=len(rows) - 1), rows)


def _story_rows(success, eval_at=None, explorer=None, handed=None, process=None):
    rows = [{"iteration": 0, "eval/success": 0.0}]
    for it, s in enumerate(success, 1):
        row = {"iteration": it, "rollout/success": s, "rollout/env_steps": 100 * it}
        if explorer is not None:
            row.update(
                {
                    "explorer/success": explorer[it - 1],
                    "swap/successes": 4 * (explorer[it - 1] > 0),
                    "swap/trained_successes": handed[it - 1],
                    "swap/is_weight_mean": 0.5,
                }
            )
        if process is not None:
            row["rollout/process_return"] = process[it - 1]
        rows.append(row)
    rows[-1]["eval/success"] = eval_at if eval_at is not None else success[-1]
    return rows


def test_run_story_computes_every_number_and_direction_from_the_runs():
    """Notebook 00's paragraph: when each learner first reached the level, where its test success went,
    which way dense's process return moved, what the explorer handed over, and why an RSPO learner sat
    at 0 beside a winning explorer - each from the logs, so another seed gets other words."""
    outcome = _story_run("outcome", _story_rows([0, 0, 0.5, 0.5, 1.0]))
    dense = _story_run(
        "dense", _story_rows([0.5, 0.5, 0.5, 0.2, 0.2], eval_at=0.25, process=[0.3, 0.5, 0.9, 1.2, 1.4])
    )
    rspo = _story_run(
        "rspo",
        _story_rows([0, 0, 0, 0.5, 1.0], explorer=[0.25, 0.5, 0.75, 1.0, 1.0], handed=[0, 2, 3, 1, 0]),
    )
    text = " ".join(lp.run_story({"outcome": outcome, "dense": dense, "rspo": rspo}))
    assert (
        "The outcome learner: its own rollouts first won 25% of episodes (a 3-iteration mean) after 400"
        in text
    )
    assert "went from 0% to 100%" in text and "went from 0% to 25%" in text
    assert "rose from 0.30 to 1.40" in text
    assert "won 70% of its episodes on average (peak 100%) and offered 20 winning" in text
    assert "trained on 6 of them" in text and "importance weight after truncation 0.50" in text
    assert "For its first 3 iterations the learner's own rollouts won nothing" in text
    assert "already won up to 75%" in text and "group-relative" in text
    # never reached; process return falling; an explorer that handed nothing over is named as such
    never = _story_run("dense", _story_rows([0.0, 0.1], process=[1.0, 0.5]))
    captured = _story_run("rspo", _story_rows([0.0, 0.0, 0.0], explorer=[0.5] * 3, handed=[0, 0, 0]))
    text = " ".join(lp.run_story({"dense": never, "rspo": captured}))
    assert (
        "never won 25% of episodes in its 200 environment steps" in text and "fell from 1.00 to 0.50" in text
    )
    assert "trained on none of them (the explorer handed over nothing)" in text
    # a critic's learner is not told the group-relative reason
    ppo = _story_run("rspo", _story_rows([0.0, 0.0, 0.5], explorer=[0.5] * 3, handed=[1, 1, 1]), algo="ppo")
    text = " ".join(lp.run_story({"rspo": ppo}))
    assert "For its first 2 iterations" in text and "group-relative" not in text


def test_the_budget_matched_form_is_its_own_claims_row():
    """The quick profile's RSPO runs are budget-matched (``...-rspo-matched-s<seed>``): the claims table
    has their row, named by the form, and never pools the two forms (notebook 05 found none before)."""
    from pathlib import Path

    from rspo.core.config import TrainConfig
    from rspo.study.analysis import Run

    def run(reward, seed, final, budget="extra", m=0.1):
        cfg = TrainConfig(
            env="detour",
            algo="grpo",
            reward=reward,
            seed=seed,
            misalignment=m,
            iterations=2,
            swap_budget=budget,
        )
        rows = [{"iteration": 0, "eval/success": 0.0}] + [
            {"iteration": it, "rollout/env_steps": 100 * it, "rollout/success": final, "eval/success": final}
            for it in (1, 2)
        ]
        return Run(Path("x"), cfg, rows)

    runs = [run("outcome", s, 0.5, m=0.0) for s in range(3)] + [run("dense", s, 0.2) for s in range(3)]
    runs += [run("rspo", s, 0.9, "matched") for s in range(3)] + [run("rspo", s, 0.1) for s in range(3)]
    groups = lp.by_reward(runs)
    assert sorted(groups[("detour", "grpo", 0.1)]) == ["dense", "rspo", "rspo-matched"]
    _, lines = lp.claims_table(runs, boot=200)
    assert [line[2] for line in lines] == ["grpo", "grpo (matched)"]
    assert lines[0][6].startswith("no:") and lines[1][6].startswith("yes:")
