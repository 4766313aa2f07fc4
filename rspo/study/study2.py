"""The lab's study 2 (docs/lab/protocol-2.md): a premise gate on baselines alone, then RSPO.

Study 1 (docs/lab/protocol.md) ran RSPO where neither baseline failed. Study 2 first looks for a
setting of ``detour`` where both premises hold - outcome-only is slow, (a), and the dense learner is
biased at equal environment steps, (b) - and where the dense learner finds successes before it
drifts, so that an explorer has some to hand over; only there does RSPO run. This module holds what
protocol 2 registers, so that the script that trains (``benchmarks/lab_study2.py``), the gate's
table and the claims read one definition:

- :data:`STAGES`: the settings to scan, stage A first (stage B only if no setting of A passes);
- :data:`BUDGET`, :data:`RSPO_ITERATIONS`, the seeds (:data:`SCAN_SEEDS`, :data:`CONFIRM_SEEDS`);
- :func:`scan_configs`, :func:`confirm_configs`, :func:`rspo_configs`: the runs of each phase;
- :func:`gate`: the premise gate's statistics and verdicts for one setting's outcome and dense runs;
- :func:`explorer_summary`: per RSPO run, what its explorer handed over (capture: nothing).

Runs lie in ``<root>/<phase>/<setting>/<run>/`` (``phase``: scan, confirm, rspo); the outcome
learner's runs of a setting lie in the folder of its observation settings alone (``L7``): its
training does not depend on the process reward (m, milestones, lure).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from rspo.core.paths import CHECKOUT
from rspo.study.claims import bootstrap, eval_at, explorer_summary, final, p1_ratio, total_steps

# the committed archive of study 2's runs (results/lab/study2/<phase>/<setting>/<run>/)
ARCHIVE = CHECKOUT / "results" / "lab" / "study2"
BUDGET = 60  # iterations of an outcome or dense run (8 tasks x 4 copies each)
RSPO_ITERATIONS = {"extra": 30, "matched": 60}  # extra samples about twice a baseline's steps per iteration
SCAN_SEEDS = (10, 11, 12)
CONFIRM_SEEDS = (tuple(range(20, 30)), tuple(range(30, 40)))  # the first candidate's, the second's
OTHER_ALGO_SEEDS = 5  # PPO and GiGPO: the first five of the chosen setting's confirmation seeds
REACH = 0.25  # a dense run "reaches" when its rollout success (3-iteration moving mean) peaks at >= this
SCAN_B_MARGIN = -0.15  # the scan passes a setting whose (b) estimate is at most this (15 points)
SCAN_REACH = 2  # of the 3 scan seeds
CONFIRM_REACH = 8  # of the 10 confirmation seeds
MAX_CONFIRMATIONS = 2


@dataclass(frozen=True)
class Setting:
    """One setting of ``detour``: the observation knobs (``length``, ``distractors``; the horizon is
    the environment's default, 2 x length past 6 rooms) and the process reward's (m, milestones, lure)."""

    length: int
    m: float
    milestones: float = 0.5
    lure: float = 0.5
    distractors: int = 1

    @property
    def name(self) -> str:
        extra = "" if self.milestones == 0.5 else f"-ms{self.milestones:g}"
        extra += "" if self.lure == 0.5 else f"-lure{self.lure:g}"
        extra += "" if self.distractors == 1 else f"-d{self.distractors}"
        return f"{self.observation_name}-m{self.m:g}{extra}"

    @property
    def observation_name(self) -> str:
        """The folder of the outcome learner's runs: what the agent sees, not what the process reward pays."""
        return f"L{self.length}" + ("" if self.distractors == 1 else f"-d{self.distractors}")

    def env_options(self, with_reward: bool = True) -> dict:
        """``TrainConfig.env_options``: only the knobs away from the environment's defaults."""
        options: dict = {"length": self.length} if self.length != 6 else {}
        if self.distractors != 1:
            options["distractors"] = self.distractors
        if with_reward and self.milestones != 0.5:
            options["milestones"] = self.milestones
        if with_reward and self.lure != 0.5:
            options["lure"] = self.lure
        return options


@dataclass
class Stage:
    name: str
    settings: list[Setting] = field(default_factory=list)


STAGES = {
    "A": Stage("A", [Setting(length, m) for length in (7, 8) for m in (0.1, 0.15, 0.2)]),
    # only if no setting of stage A passes the scan: the aligned milestones doubled, so the dense
    # learner is led further toward the chest before the map's pay wins
    "B": Stage("B", [Setting(length, m, milestones=1.0) for length in (7, 8) for m in (0.15, 0.25)]),
}


# the setting the confirmation chose (docs/lab/protocol-2.md, committed before any RSPO run on it);
# the quick profile's lab is this setting (rspo.core.profiles.QUICK_LAB)
CHOSEN = "L7-m0.15-ms1"


def find_setting(name: str) -> Setting:
    for stage in STAGES.values():
        for setting in stage.settings:
            if setting.name == name:
                return setting
    names = [s.name for stage in STAGES.values() for s in stage.settings]
    raise ValueError(f"unknown study-2 setting {name!r}; protocol 2 registers: {', '.join(names)}")


def _config(root, phase, setting: Setting, algo, reward, seed, **overrides):
    from rspo.study.experiments import run_config

    outcome = reward == "outcome"
    folder = Path(root) / phase / (setting.observation_name if outcome else setting.name)
    return run_config(
        "lab",
        "detour",
        algo,
        reward,
        seed,
        folder,
        misalignment=0.0 if outcome else setting.m,
        env_options=setting.env_options(with_reward=not outcome),
        **{"iterations": BUDGET, **overrides},
    )


def baseline_configs(root, phase: str, settings, seeds, algo: str = "grpo") -> list:
    """Outcome runs once per observation setting, dense runs per setting; seed-major."""
    configs, seen = [], set()
    for seed in seeds:
        for setting in settings:
            for reward in ("outcome", "dense"):
                cfg = _config(root, phase, setting, algo, reward, seed)
                if cfg.run_dir not in seen:
                    seen.add(cfg.run_dir)
                    configs.append(cfg)
    return configs


def scan_configs(root, stage: str = "A") -> list:
    return baseline_configs(root, "scan", STAGES[stage].settings, SCAN_SEEDS)


def confirm_configs(root, setting: Setting, candidate: int = 0) -> list:
    return baseline_configs(root, "confirm", [setting], CONFIRM_SEEDS[candidate])


def rspo_configs(root, setting: Setting, candidate: int = 0) -> list:
    """RSPO in both forms on GRPO at the confirmation seeds, and on PPO and GiGPO at the first
    :data:`OTHER_ALGO_SEEDS` of them with their own outcome and dense runs (GRPO's are the
    confirmation's)."""
    seeds = CONFIRM_SEEDS[candidate]
    configs = []
    for algo, algo_seeds in (
        ("grpo", seeds),
        ("ppo", seeds[:OTHER_ALGO_SEEDS]),
        ("gigpo", seeds[:OTHER_ALGO_SEEDS]),
    ):
        for seed in algo_seeds:
            for budget, its in RSPO_ITERATIONS.items():
                configs.append(
                    _config(root, "rspo", setting, algo, "rspo", seed, swap_budget=budget, iterations=its)
                )
            if algo != "grpo":
                configs += [_config(root, "rspo", setting, algo, r, seed) for r in ("outcome", "dense")]
    return configs


# --- the gate -----------------------------------------------------------------------------------
def peak_rollout_success(run, window: int = 3) -> float:
    """The peak of the run's rollout success, a moving mean over ``window`` iterations."""
    values = [r["rollout/success"] for r in run.rows if "rollout/success" in r]
    if len(values) < window:
        return max(values, default=0.0)
    return max(statistics.fmean(values[i : i + window]) for i in range(len(values) - window + 1))


def _diff(dense_vals, outcome_vals) -> float:
    return statistics.fmean(dense_vals) - statistics.fmean(outcome_vals)


def a_label(est: float, low: float, high: float) -> str:
    """(a) by protocol 2: yes when the interval's upper end is <= 0.5, no when its lower end is above
    0.5, within noise when it straddles; n/a when outcome never reaches its own level (nan)."""
    if any(math.isnan(v) for v in (est, low, high)):
        return "n/a"
    return "yes" if high <= 0.5 else ("no" if low > 0.5 else "within noise")


def b_label(est: float, low: float, high: float) -> str:
    """(b): yes when the interval of dense - outcome lies below 0, no when above, within noise otherwise."""
    return "yes" if high < 0 else ("no" if low > 0 else "within noise")


def gate(outcome: list, dense: list, boot: int = 2000) -> dict:
    """Protocol 2's premise gate for one setting, from its finished outcome and dense runs (GRPO).

    - ``a``: P1's ratio (:func:`rspo.study.claims.p1_ratio`) over the runs as they are (the budget): the
      steps at which dense's mean rollout-success curve first reaches 0.9 x outcome's final rollout
      success, over outcome's; yes when the interval's upper end is <= 0.5, no when its lower end is
      above 0.5, within noise otherwise (n/a when outcome never succeeds).
    - ``b``: dense - outcome final greedy test success at equal steps: ``steps`` is the smaller of the
      two methods' mean final environment steps; each run's evaluation row closest to it. yes when the
      interval lies below 0, no when above, within noise otherwise.
    - ``reach``: dense runs whose rollout success peaks at >= :data:`REACH` (3-iteration moving mean).
    """
    steps = min(total_steps(outcome), total_steps(dense))
    d_vals = [eval_at(r, steps=steps) for r in dense]
    o_vals = [eval_at(r, steps=steps) for r in outcome]
    a = bootstrap(p1_ratio, [outcome, dense], boot)
    b = bootstrap(_diff, [d_vals, o_vals], boot)
    peaks = [peak_rollout_success(r) for r in dense]
    return {
        "seeds": (len(outcome), len(dense)),
        "steps": steps,
        "a": a,
        "a_label": a_label(*a),
        "b": b,
        "b_label": b_label(*b),
        "reach": sum(p >= REACH for p in peaks),
        "peaks": peaks,
        "outcome_final": statistics.fmean(o_vals),
        "dense_final": statistics.fmean(d_vals),
        "outcome_final_rollout": statistics.fmean(final(r, "rollout/success") for r in outcome),
    }


def scan_pass(g: dict) -> bool:
    """The scan's rule (point estimates on 3 seeds): (a) estimate <= 0.5, (b) estimate <=
    :data:`SCAN_B_MARGIN`, and :data:`SCAN_REACH` dense seeds reaching."""
    a = g["a"][0]
    return not math.isnan(a) and a <= 0.5 and g["b"][0] <= SCAN_B_MARGIN and g["reach"] >= SCAN_REACH


def gate_pass(g: dict) -> bool:
    """The confirmation's rule (10 fresh seeds): (a) yes, (b) yes, :data:`CONFIRM_REACH` seeds reaching."""
    return g["a_label"] == "yes" and g["b_label"] == "yes" and g["reach"] >= CONFIRM_REACH


def finished_runs(folder: Path, **fields) -> list:
    """The finished runs in ``folder`` whose config has every one of ``fields`` (none: no folder)."""
    from rspo.study.analysis import load_runs

    if not folder.is_dir():
        return []
    return [
        r
        for r in load_runs(folder)
        if r.finished and all(getattr(r.config, k) == v for k, v in fields.items())
    ]


# TrainConfig fields that name, place or report a run without changing its numbers
NOT_SETTINGS = ("seed", "name", "out_dir", "resume", "progress", "extra", "checkpoint_every")


def same_settings(a, b) -> bool:
    """Whether two TrainConfigs train the same way (every field but the seed, the name and where and how
    the run is kept)."""
    import dataclasses

    return all(
        getattr(a, f.name) == getattr(b, f.name) for f in dataclasses.fields(a) if f.name not in NOT_SETTINGS
    )


def archived_like(cfg, root=None) -> list:
    """The archived study-2 runs (every phase) trained with ``cfg``'s settings at other seeds: the
    bands a student's own run of the quick profile is drawn over (notebook 00). Empty where the archive
    holds none (another profile or environment, or an installed package without results/)."""
    from rspo.core.config import TrainConfig
    from rspo.study.analysis import load_run

    root = Path(root) if root else ARCHIVE
    runs = []
    for path in sorted(root.glob("*/*/*/config.json")):
        try:
            if not same_settings(TrainConfig.load(path), cfg):
                continue
        except ValueError:  # a config of an older layout: not this setting's
            continue
        run = load_run(path.parent)
        if run.finished and run.config.seed != cfg.seed:
            runs.append(run)
    return runs


def setting_runs(root, phase: str, setting: Setting, algo: str = "grpo") -> tuple[list, list]:
    """The finished outcome and dense runs of ``setting`` in ``<root>/<phase>/`` (of ``algo``)."""
    folder = Path(root) / phase
    return tuple(
        finished_runs(folder / name, algo=algo, reward=reward, iterations=BUDGET)
        for name, reward in ((setting.observation_name, "outcome"), (setting.name, "dense"))
    )


def gate_table(root, phase: str, settings, boot: int = 2000) -> tuple[list[str], list[list[str]], dict]:
    """The gate's table for ``settings`` in ``<root>/<phase>/``: one line per setting with runs, and
    ``{setting name: gate dict}``."""
    head = [
        "setting",
        "seeds o/d",
        "(a) dense's steps / outcome's",
        "(b) dense - outcome, equal steps (pts)",
        "at steps",
        "greedy success o / d (%)",
        "dense reaches 25%",
        "passes",
    ]
    lines, results = [], {}
    rule = scan_pass if phase == "scan" else gate_pass
    for setting in settings:
        outcome, dense = setting_runs(root, phase, setting)
        if not outcome or not dense:
            continue
        g = gate(outcome, dense, boot)
        results[setting.name] = g
        a, b = g["a"], g["b"]
        lines.append(
            [
                setting.name,
                f"{g['seeds'][0]}/{g['seeds'][1]}",
                f"{g['a_label']}: {ratio(a[0])} [{ratio(a[1])}, {ratio(a[2])}]",
                f"{g['b_label']}: {100 * b[0]:+.0f} [{100 * b[1]:+.0f}, {100 * b[2]:+.0f}]",
                f"{g['steps']:,.0f}",
                f"{100 * g['outcome_final']:.0f} / {100 * g['dense_final']:.0f}",
                f"{g['reach']} of {g['seeds'][1]}",
                "yes" if rule(g) else "no",
            ]
        )
    return head, lines, results


def behaviour_table(root, phase: str, settings) -> tuple[list[str], list[list[str]]]:
    """What the gate's runs did, for reading its verdicts: per outcome folder and dense setting, the
    mean over seeds of rollout success and greedy test success at a few iterations, the dense runs'
    peak rollout success (its 3-iteration moving mean), and the last iteration's process return and
    episode length."""
    points = (6, 12, 24, 42, 60)
    head = ["runs", "seeds"] + [f"rollout / greedy it {it}" for it in points]
    head += ["peak rollout", "final process return", "final episode length"]
    lines, seen = [], set()
    for setting in settings:
        outcome, dense = setting_runs(root, phase, setting)
        for label, runs in (
            (f"{setting.observation_name} outcome", outcome),
            (f"{setting.name} dense", dense),
        ):
            if not runs or label in seen:
                continue
            seen.add(label)

            def at(it, key, runs=runs):
                values = [r[key] for run in runs for r in run.rows if r.get("iteration") == it and key in r]
                return f"{100 * statistics.fmean(values):.0f}" if len(values) == len(runs) else "-"

            cells = [f"{at(it, 'rollout/success')} / {at(it, 'eval/success')}" for it in points]
            lines.append(
                [label, str(len(runs)), *cells]
                + [
                    f"{100 * statistics.fmean(peak_rollout_success(r) for r in runs):.0f}",
                    f"{statistics.fmean(final(r, 'rollout/process_return') for r in runs):.2f}",
                    f"{statistics.fmean(final(r, 'rollout/episode_len') for r in runs):.1f}",
                ]
            )
    return head, lines


def ratio(value: float) -> str:
    """(a)'s ratio for a table: ``never`` where dense's mean curve never reaches outcome's level."""
    return "never" if math.isinf(value) else ("n/a" if math.isnan(value) else f"{value:.2f}")


def ranked(results: dict) -> list[str]:
    """The scan-passing settings, most biased (b) first, then the smallest (a)."""
    passing = [(name, g) for name, g in results.items() if scan_pass(g)]
    return [name for name, g in sorted(passing, key=lambda kv: (kv[1]["b"][0], kv[1]["a"][0]))]


# --- the claims -----------------------------------------------------------------------------------
def rspo_runs(root, setting: Setting, algo: str, budget: str) -> list:
    """The finished RSPO runs of one form (``swap_budget``) at ``setting``."""
    return finished_runs(
        Path(root) / "rspo" / setting.name,
        algo=algo,
        reward="rspo",
        swap_budget=budget,
        iterations=RSPO_ITERATIONS[budget],
    )


def claim_groups(root, setting: Setting, candidate: int = 0):
    """(algo, RSPO form, outcome runs, dense runs, RSPO runs) for every base algorithm and form with
    runs at ``setting``: GRPO's baselines are the confirmation's (its seeds), PPO's and GiGPO's their
    own in the RSPO phase's folders."""
    for algo in ("grpo", "ppo", "gigpo"):
        outcome, dense = setting_runs(root, "confirm" if algo == "grpo" else "rspo", setting, algo)
        if algo == "grpo":
            seeds = set(CONFIRM_SEEDS[candidate])
            outcome = [r for r in outcome if r.config.seed in seeds]
            dense = [r for r in dense if r.config.seed in seeds]
        if not outcome or not dense:
            continue
        for budget in RSPO_ITERATIONS:
            runs = rspo_runs(root, setting, algo, budget)
            if runs:
                yield algo, budget, outcome, dense, runs


def claims_table(root, setting: Setting, candidate: int = 0, boot: int = 2000):
    """Study 2's claims at ``setting``: per base algorithm and RSPO form, (a) by the gate's statistic,
    (b) and (c) by study 1's rules (:func:`rspo.study.claims.decide`: equal steps first, equal iterations
    beside), and the explorer's capture (:func:`rspo.study.claims.captured_cell`: runs whose explorer handed the
    learner no success, and (c) again without them). Returns (head, lines, notes)."""
    from rspo.study.claims import c_cell, captured_cell, decide, fmt

    head = [
        "algo",
        "RSPO form",
        "seeds o/d/r",
        "(a) outcome slow",
        "(b) dense biased (equal steps)",
        "(c) RSPO >= both (equal steps)",
        "(c) at equal iterations",
        "explorer captured",
    ]
    lines, notes = [], []
    gates: dict[str, dict] = {}
    for algo, budget, outcome, dense, runs in claim_groups(root, setting, candidate):
        if algo not in gates:
            gates[algo] = gate(outcome, dense, boot)
        g = gates[algo]
        d = decide(outcome, dense, runs, boot, with_a=False)
        summaries = [explorer_summary(r) for r in runs]
        cells = [c_cell(d[view]) for view in ("steps", "iterations")]
        a = g["a"]
        lines.append(
            [
                algo,
                budget,
                "/".join(map(str, (len(outcome), len(dense), len(runs)))),
                f"{g['a_label']}: {ratio(a[0])} [{ratio(a[1])}, {ratio(a[2])}]",
                f"{d['steps']['b_verdict']}: {fmt(d['steps']['b'], 0, 100)} at {d['rspo_steps']:,.0f} steps",
                cells[0],
                cells[1],
                captured_cell(outcome, dense, runs, boot),
            ]
        )
        steps = d["rspo_steps"]
        at = {
            "outcome": [eval_at(r, steps=steps) for r in outcome],
            "dense": [eval_at(r, steps=steps) for r in dense],
            "RSPO": [eval_at(r, iteration=r.rows[-1]["iteration"]) for r in runs],
        }
        full = sum(v >= 1.0 for v in at["outcome"])
        notes.append(
            f"{algo} {budget}: greedy test success at equal steps ({steps:,.0f}): "
            + ", ".join(f"{k} {100 * statistics.fmean(v):.0f}%" for k, v in at.items())
            + f"; outcome at 100% on {full} of {len(outcome)} seeds"
            + (
                " - at the ceiling, RSPO - outcome cannot lie above 0 there"
                if 2 * full >= len(outcome)
                else ""
            )
        )
        handed = [s["handed"] for s in summaries]
        notes.append(
            f"{algo} {budget}: explorer rollout success {100 * statistics.fmean(s['explorer_success'] for s in summaries):.0f}% "
            f"(mean over iterations and seeds), winning explorer episodes trained on per run "
            f"{statistics.fmean(handed):.1f} (min {min(handed)}, max {max(handed)}), replayed groups holding a win "
            f"{100 * statistics.fmean(s['success_group_frac'] for s in summaries):.0f}%, off-policy tokens per update "
            f"{statistics.fmean(s['tokens'] for s in summaries):.0f}, mean IS weight "
            f"{statistics.fmean(s['is_weight_mean'] for s in summaries):.2f}, truncated "
            f"{100 * statistics.fmean(s['truncated_frac'] for s in summaries):.0f}%"
        )
    return head, lines, notes


# --- post hoc, not registered by protocol 2: how fast each method gets there ------------------------
# Protocol 2 reads (c) where the runs end; at L7-m0.15-ms1 outcome ends at 100% on most seeds, so
# RSPO - outcome cannot lie above 0 there. This table reads the whole curve instead. It was added after
# protocol 2's results were seen, so it is descriptive (no verdict words); docs/lab/protocol-3.md
# registers its statistic for fresh seeds.
SPEED_POINTS = (0.25, 0.5, 0.75, 1.0)  # fractions of the baselines' budget T (outcome's mean final steps)
SPEED_NAMES = ("T/4", "T/2", "3T/4", "T")


def success_at_steps(run, steps: float) -> float:
    """Greedy test success at ``steps`` environment steps, linear between the run's evaluations (its
    last evaluation's value beyond them)."""
    from rspo.study.claims import curve, interp

    return interp(*curve(run, "eval/success"), steps)


def success_area(run, budget: float, points: int = 200) -> float:
    """The run's mean greedy test success over ``[0, budget]`` environment steps: the area under its
    evaluation curve (linear between evaluations) divided by ``budget``, by the midpoint rule."""
    from rspo.study.claims import curve, interp

    xs, ys = curve(run, "eval/success")
    return statistics.fmean(interp(xs, ys, budget * (k + 0.5) / points) for k in range(points))


SPEED_HEAD = [f"at {name}: o / d / RSPO (%)" for name in SPEED_NAMES] + [
    "mean over [0, T]: o / d / RSPO (%)",
    "RSPO - outcome (pts)",
    "RSPO - dense (pts)",
]


def speed_cells(outcome: list, dense: list, runs: list, boot: int = 2000) -> list[str]:
    """:data:`SPEED_HEAD`'s cells for one RSPO form: greedy test success at fractions of the baselines'
    budget T (outcome's mean final environment steps) and its mean over [0, T] for outcome, dense and
    RSPO, with RSPO's differences in that mean (95% bootstrap intervals over seeds)."""
    from rspo.study.claims import _mean_diff, bootstrap, fmt, total_steps

    t = total_steps(outcome)
    groups = (outcome, dense, runs)
    row = []
    for frac in SPEED_POINTS:
        means = [100 * statistics.fmean(success_at_steps(r, frac * t) for r in g) for g in groups]
        row.append(" / ".join(f"{m:.0f}" for m in means))
    areas = [[success_area(r, t) for r in g] for g in groups]
    row.append(" / ".join(f"{100 * statistics.fmean(a):.0f}" for a in areas))
    return row + [fmt(bootstrap(_mean_diff, [areas[2], other], boot), 0, 100) for other in areas[:2]]


def speed_table(root, setting: Setting, candidate: int = 0, boot: int = 2000):
    """Per base algorithm and RSPO form: :func:`speed_cells` (no verdict). Returns (head, lines)."""
    from rspo.study.claims import total_steps

    head = ["algo", "RSPO form", "seeds o/d/r", "T (steps)"] + SPEED_HEAD
    lines = []
    for algo, budget, outcome, dense, runs in claim_groups(root, setting, candidate):
        seeds = "/".join(str(len(g)) for g in (outcome, dense, runs))
        lines.append(
            [algo, budget, seeds, f"{total_steps(outcome):,.0f}"] + speed_cells(outcome, dense, runs, boot)
        )
    return head, lines


# --- what the study found, in words computed from its numbers ----------------------------------------
def scan_results(root, boot: int = 2000) -> dict[str, dict]:
    """Per stage with runs in ``<root>/scan``: ``{setting name: gate dict}``."""
    out = {}
    for name, stage in STAGES.items():
        _, _, results = gate_table(root, "scan", stage.settings, boot)
        if results:
            out[name] = results
    return out


def finding(root, boot: int = 2000, claims: dict | None = None) -> list[str]:
    """Sentences on the scan and the confirmations in ``root``, each computed from the gate's numbers:
    per stage, how many settings pass the scan's rule and which part of it each failing one misses."""
    lines = []
    scans = scan_results(root, boot)
    for stage, results in scans.items():
        passing = ranked(results)
        fails_a = [n for n, g in results.items() if math.isnan(g["a"][0]) or g["a"][0] > 0.5]
        fails_b = [n for n, g in results.items() if g["b"][0] > SCAN_B_MARGIN]
        fails_r = [n for n, g in results.items() if g["reach"] < SCAN_REACH]
        lines.append(
            f"Scan stage {stage}: {len(passing)} of {len(results)} settings pass the scan's rule"
            + (
                " ("
                + "; ".join(
                    f"{n}: (a) {ratio(results[n]['a'][0])}, (b) {100 * results[n]['b'][0]:+.0f} points, "
                    f"dense reaches {REACH:.0%} on {results[n]['reach']} of {results[n]['seeds'][1]}"
                    for n in passing
                )
                + ")"
                if passing
                else ""
            )
            + f"; (a)'s estimate is above 0.5 (or dense never reaches outcome's level) at {len(fails_a)}, "
            f"(b)'s estimate is above {100 * SCAN_B_MARGIN:+.0f} points at {len(fails_b)}, and the dense "
            f"learner reaches {REACH:.0%} rollout success on fewer than {SCAN_REACH} of 3 seeds at {len(fails_r)}."
        )
        never = [n for n in fails_r if results[n]["reach"] == 0]
        if never:
            lines.append(
                f"  At {', '.join(never)} no dense seed reaches {REACH:.0%}: a reward that misleads the dense "
                "learner from its first iterations leaves an explorer trained on it nothing to hand over."
            )
    confirm = Path(root) / "confirm"
    if confirm.is_dir():
        for folder in sorted(p.name for p in confirm.iterdir() if p.is_dir() and "-m" in p.name):
            _, _, results = gate_table(root, "confirm", [find_setting(folder)], boot)
            for name, g in results.items():
                lines.append(
                    f"Confirmation of {name} ({g['seeds'][1]} seeds): (a) {g['a_label']}: "
                    f"{ratio(g['a'][0])} [{ratio(g['a'][1])}, {ratio(g['a'][2])}] of outcome's steps, "
                    f"(b) {g['b_label']}: {100 * g['b'][0]:+.0f} [{100 * g['b'][1]:+.0f}, {100 * g['b'][2]:+.0f}] "
                    "points at equal steps, "
                    f"dense reaches {REACH:.0%} on {g['reach']} of {g['seeds'][1]}: the gate "
                    + (f"passes: {name} is the chosen setting." if gate_pass(g) else "fails.")
                )
    claims = rspo_claims(root, boot) if claims is None else claims  # (the bootstraps: seconds)
    for setting, (_, rows, _) in claims.items():
        lines += rspo_sentences(setting, rows)
    if scans and not any(ranked(r) for r in scans.values()) and len(scans) == len(STAGES):
        lines.append(
            "No registered setting passes the scan, so by protocol 2 no RSPO run is made in study 2."
        )
    return lines


ALGO_NAMES = {"grpo": "GRPO", "ppo": "PPO", "gigpo": "GiGPO"}


def missing_rspo_runs(root, setting: Setting, candidate: int = 0) -> list[str]:
    """The names of the RSPO phase's registered runs at ``setting`` not finished in ``root``."""
    from rspo.study.analysis import load_run

    missing = []
    for cfg in rspo_configs(root, setting, candidate):
        path = Path(cfg.out_dir) / cfg.name
        if not (path / "metrics.jsonl").is_file() or not load_run(path).finished:
            missing.append(f"{path.parent.name}/{cfg.name}")
    return missing


def rspo_claims(root, boot: int = 2000) -> dict:
    """``{setting: claims_table(...)}`` for every setting whose RSPO phase is complete in ``<root>/rspo``
    (protocol 2 reads the claims only once all of the phase's runs are finished)."""
    folder = Path(root) / "rspo"
    if not folder.is_dir():
        return {}
    found = {}
    # a setting's folder (its outcome runs lie in the observation setting's, e.g. L7/)
    for name in sorted(p.name for p in folder.iterdir() if p.is_dir() and "-m" in p.name):
        setting = find_setting(name)
        if not missing_rspo_runs(root, setting):
            found[setting] = claims_table(root, setting, boot=boot)
    return found


def rspo_sentences(setting: Setting, rows: list[list[str]]) -> list[str]:
    """One sentence per claims row (base algorithm x RSPO form), each verdict copied from the table's
    cells (:func:`claims_table`), and first a headline: (c)'s verdicts at equal steps, counted."""
    verdicts = [row[5].split(":")[0] for row in rows]
    counts = ", ".join(f"{verdicts.count(v)} {v}" for v in ("yes", "no", "within noise") if v in verdicts)
    lines = [
        f"RSPO at {setting.name}, where both premises hold: (c) RSPO >= both at equal steps is {counts} "
        f"of {len(rows)} (base algorithm x RSPO form)."
    ]
    for algo, form, seeds, _a, b, c_steps, c_its, captured in rows:
        lines.append(
            f"  {ALGO_NAMES.get(algo, algo)}, {form} form (seeds outcome/dense/RSPO {seeds}): (c) at equal "
            f"steps {c_steps}; at equal iterations {c_its}; (b) {b}; explorer captured: {captured}."
        )
    return lines


def finding_markdown(root, boot: int = 2000) -> str:
    """:func:`finding` as Markdown bullets, then each setting's RSPO claims table: the block the README
    docs/lab/findings.md shows between ``<!-- study2 -->`` markers (a test keeps the copy equal to this)."""
    from rspo.study.analysis import to_markdown

    claims = rspo_claims(root, boot)  # once: finding's sentences and the tables read the same claims
    lines = finding(root, boot, claims)
    # the headline first, in bold: what RSPO did where its premises hold ((c)'s verdicts, counted)
    out = [f"**{rspo_sentences(setting, rows)[0]}**\n" for setting, (_, rows, _) in claims.items()]
    for line in lines:
        out.append(("  " + line.strip()) if line.startswith("  ") else f"- {line}")
    for setting, (head, rows, notes) in claims.items():
        out += ["", f"Study 2's claims at {setting.name} (points of greedy test success, 95% intervals):", ""]
        out.append(to_markdown(head, rows).rstrip("\n"))
        out += [""] + [f"- {note}" for note in notes]
        out += ["", SPEED_CAPTION.format(setting=setting.name), ""]
        out.append(to_markdown(*speed_table(root, setting, boot=boot)).rstrip("\n"))
    return "\n".join(out) + "\n"


SPEED_CAPTION = (
    "Post hoc, not registered by protocol 2 (descriptive, no verdict; docs/lab/protocol-3.md registers it "
    "for fresh seeds): how fast each method gets there at {setting} - greedy test success at fractions of "
    "the baselines' budget T and its mean over [0, T], RSPO's differences with 95% intervals:"
)
