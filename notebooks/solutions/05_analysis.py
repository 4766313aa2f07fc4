"""Solutions to notebook 05's exercises (the code that fills each stub): the two answers, computed
from the committed premise runs of the lab (results/lab/study1/premises)."""

import statistics
from pathlib import Path

from rspo.study.claims import by_reward, curve, cut, final, interp, lab_runs, total_steps

PREMISES = Path(__file__).resolve().parents[2] / "results" / "lab" / "study1" / "premises"


def gaps(root=PREMISES):
    """Per m: dense - outcome final greedy test success, and distinct successes by half of outcome's steps."""
    groups = by_reward(lab_runs(root))
    outcome = [cut(r, 30) for r in groups[("detour", "grpo", 0.0)]["outcome"]]
    half = 0.5 * total_steps(outcome)

    def success(runs):
        return statistics.fmean(final(r, "eval/success", 1) for r in runs)

    def distinct(runs):
        return statistics.fmean(interp(*curve(r, "rollout/distinct_successes"), half) for r in runs)

    out = {}
    for (_, _, m), got in sorted(groups.items(), key=lambda kv: kv[0][2]):
        dense = [cut(r, 30) for r in got["dense"]]
        out[m] = (success(dense) - success(outcome), distinct(dense) - distinct(outcome))
    return out


table = gaps()
for m, (final_gap, distinct_gap) in table.items():
    print(
        f"m = {m:<4g}: final success dense - outcome {final_gap:+.2f}, distinct successes {distinct_gap:+.0f}"
    )
m_dense_ends_below = min(m for m, (f, _) in table.items() if f < 0)
m_dense_explores_less = min(m for m, (_, d) in table.items() if d < 0)
