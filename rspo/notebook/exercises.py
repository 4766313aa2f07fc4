"""The notebooks' exercises: one ``check_*`` function per exercise, and :class:`Exercises`, the notebooks' view.

Each exercise of notebooks 01-05 has a task (a markdown cell), a stub the student fills in (a function
that raises ``NotImplementedError``, or a value ``None``) and a checking cell. The checks here compare
the student's answer with the kit's own code (``rspo.core.advantages``, ``rspo.core.rewards``, ``rspo.core.swap``,
``rspo.core.losses``) on random inputs and on the notebook's real data, or with what the committed lab logs
say (``results/lab/study1/premises``):

- an untouched stub raises :class:`NotDone` (what to fill in);
- a wrong answer raises :class:`Wrong`, an ``AssertionError`` whose message shows an input where the
  answer differs from the kit's and, where a common mistake is recognised, a hint;
- a right answer returns the success line.

:class:`Exercises` (``ex = Exercises("02_credit_assignment", mode=exercises)`` in a notebook) runs a
check by name and decides what happens: ``mode="student"`` (the default of every notebook) prints
"not done yet" for an untouched stub and lets the notebook go on - a headless run of the unsolved
notebooks stays green - and fails on a wrong answer; ``mode="solutions"`` checks the solution kept in
``notebooks/solutions/<notebook>.py`` (the object of the same name as the stub) in place of the
student's answer, and fails unless every check passes (what ``tests/test_exercises.py`` runs).
"""

from __future__ import annotations

import importlib.util
import math
import random
import statistics
from collections.abc import Callable
from pathlib import Path

import torch

from rspo.core.paths import CHECKOUT as ROOT

SOLUTIONS_DIR = ROOT / "notebooks" / "solutions"
PREMISES_DIR = ROOT / "results" / "lab" / "study1" / "premises"
MODES = ("student", "solutions")
TOL = 1e-4


class NotDone(Exception):
    """The stub is untouched (it raises NotImplementedError, or the answer is still None)."""


class Wrong(AssertionError):
    """The answer differs from the kit's; the message says where, and hints at why."""


# --- helpers -----------------------------------------------------------------------------------------


def _call(fn: Callable, *args, **kwargs):
    """``fn(*args)``; an untouched stub (NotImplementedError, or a None result) raises NotDone."""
    if fn is None:
        raise NotDone("the answer is still None")
    if not callable(fn):
        raise Wrong(f"expected a function, got {type(fn).__name__}: {fn!r}")
    try:
        out = fn(*args, **kwargs)
    except NotImplementedError as err:
        raise NotDone("the function still raises NotImplementedError") from err
    if out is None:
        raise NotDone("the function returns None")
    return out


def _floats(x, what: str) -> list[float]:
    """A flat list of floats from a tensor, an array or a sequence of numbers."""
    try:
        if isinstance(x, torch.Tensor):
            return [float(v) for v in x.detach().flatten().tolist()]
        return [float(v) for v in x]
    except (TypeError, ValueError) as err:
        raise Wrong(f"{what} should be a list (or tensor) of numbers, got {type(x).__name__}: {x!r}") from err


def _close(a: list[float], b: list[float], tol: float = TOL) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a, b, strict=True))


def _fmt(xs) -> str:
    return "[" + ", ".join(f"{float(x):.4g}" for x in xs) + "]"


def _mismatch(what: str, inputs: str, got, expected, hint: str = "") -> Wrong:
    lines = [f"{what}: not the kit's answer on this input.", inputs, f"  yours:    {_fmt(got)}"]
    lines.append(f"  expected: {_fmt(expected)}")
    if hint:
        lines.append(f"hint: {hint}")
    return Wrong("\n".join(lines))


# --- notebook 01: the dense reward -------------------------------------------------------------------


def random_episodes(n: int, rng: random.Random, env: str = "synthetic"):
    """``n`` synthetic episodes (:class:`rspo.core.rollout.Episode`) with random outcome and process rewards
    and some invalid actions: inputs for the reward checks."""
    from rspo.core.rollout import Episode, Turn

    eps = []
    for k in range(n):
        length = rng.randint(1, 6)
        won = rng.random() < 0.5
        turns = []
        for t in range(length):
            valid = rng.random() > 0.25
            outcome = (rng.choice([1.0, 0.6]) if won and t == length - 1 else 0.0) if valid else 0.0
            process = rng.choice([0.0, 0.0, 0.1, 0.25, 0.5]) if valid else 0.0
            turns.append(
                Turn(
                    prompt="",
                    candidates=[],
                    action=f"action {t}",
                    choice=None,
                    action_ids=[],
                    token_logprobs=[],
                    anchor=f"state {t}",
                    outcome_reward=outcome,
                    process_reward=process,
                    valid=valid,
                )
            )
        eps.append(Episode(env=env, task_id=f"task {k}", group=0, copy=k, turns=turns, won=won))
    return eps


def _turns_text(ep) -> str:
    return "  turns (outcome, process, valid): " + ", ".join(
        f"({t.outcome_reward:g}, {t.process_reward:g}, {t.valid})" for t in ep.turns
    )


def _reward_check(fn, mode: str, what: str, episodes=None) -> str:
    from rspo.core.rewards import RewardSpec, compute_rewards

    rng = random.Random(0)
    specs = [RewardSpec(), RewardSpec(outcome_scale=5.0, invalid_penalty=-0.5, process_weight=2.0)]
    cases = [(ep, specs[0]) for ep in (episodes or [])]
    cases += [(ep, specs[k % 2]) for k, ep in enumerate(random_episodes(24, rng))]
    for ep, spec in cases:
        expected = compute_rewards(mode, [ep], spec)[0]
        got = _floats(_call(fn, ep, spec), "the rewards")
        if _close(got, expected):
            continue
        other = "dense" if mode == "outcome" else "outcome"
        unscaled = [
            (t.outcome_reward + (t.process_reward * spec.process_weight if mode == "dense" else 0.0))
            + (0.0 if t.valid else spec.invalid_penalty)
            for t in ep.turns
        ]
        no_penalty = [
            spec.outcome_scale
            * (t.outcome_reward + (spec.process_weight * t.process_reward if mode == "dense" else 0.0))
            for t in ep.turns
        ]
        hint = ""
        if len(got) != len(expected):
            hint = "one reward per turn of the episode"
        elif _close(got, compute_rewards(other, [ep], spec)[0]):
            hint = f"that is the {other} reward" + (
                ": the swap keeps only the outcome, the process reward is dropped"
                if mode == "outcome"
                else ": add the process reward (times spec.process_weight)"
            )
        elif _close(got, unscaled):
            hint = "the environment's outcome and process rewards are in units of a success (1.0): scale them by spec.outcome_scale"
        elif _close(got, no_penalty):
            hint = "an invalid action (turn.valid False) costs spec.invalid_penalty"
        raise _mismatch(f"{what} (spec {spec})", _turns_text(ep), got, expected, hint)
    return f"correct: your {what} match rspo.core.rewards.compute_rewards({mode!r}) on {len(cases)} episodes"


def check_dense_rewards(fn, episodes=None) -> str:
    """Notebook 01: ``fn(episode, spec) -> list[float]``, the dense reward of each turn."""
    return _reward_check(fn, "dense", "dense rewards", episodes)


# --- notebook 02: GRPO, anchor groups, the GiGPO step advantage ------------------------------------------


def _grpo_cases(rng: random.Random):
    yield [10.0, 0.0, 0.0, 10.0, -0.1, 0.0, 0.0, 0.0, 0.0], [0, 0, 0, 1, 1, 1, 2, 2, 2]
    for _ in range(30):
        rows = []
        for g in range(rng.randint(1, 4)):
            size = rng.randint(2, 6)
            if rng.random() < 0.5:
                rows += [(g, rng.choice([0.0, 10.0]) - 0.1 * rng.randint(0, 3)) for _ in range(size)]
            else:
                rows += [(g, round(rng.gauss(0, 5), 3)) for _ in range(size)]
        rng.shuffle(rows)  # a group is its id, not its position
        yield [r for _, r in rows], [g for g, _ in rows]


def _grouped(returns: list[float], groups: list[int], fn) -> list[float]:
    by: dict[int, list[float]] = {}
    for g, r in zip(groups, returns, strict=True):
        by.setdefault(g, []).append(r)
    return [fn(r, by[g]) for g, r in zip(groups, returns, strict=True)]


def check_grpo_advantage(fn) -> str:
    """Notebook 02: ``fn(returns, groups) -> advantages``, one per trajectory: the return normalised
    within its group, against :func:`rspo.core.advantages.grpo` on random groups."""
    from rspo.core.advantages import grpo

    n = 0
    for returns, groups in _grpo_cases(random.Random(0)):
        r, g = torch.tensor(returns, dtype=torch.float64), torch.tensor(groups)
        expected = grpo(g, torch.arange(len(returns)), r).tolist()
        got = _floats(_call(fn, r.clone(), g.clone()), "the advantages")
        n += 1
        if _close(got, expected):
            continue
        hint = ""
        population = _grouped(
            returns, groups, lambda x, xs: (x - statistics.fmean(xs)) / (statistics.pstdev(xs) + 1e-6)
        )
        centred = _grouped(returns, groups, lambda x, xs: x - statistics.fmean(xs))
        whole = [(x - statistics.fmean(returns)) / (statistics.stdev(returns) + 1e-6) for x in returns]
        if len(got) != len(expected):
            hint = "one advantage per trajectory (per entry of `returns`)"
        elif any(math.isnan(x) for x in got):
            hint = "a group whose returns are all equal has std 0: its advantages are exactly 0"
        elif _close(got, population, 1e-3):
            hint = "use the unbiased std (divide by n - 1, as torch.std does), not the population std"
        elif _close(got, centred):
            hint = "centring is half of it: divide by the group's std (+ 1e-6)"
        elif _close(got, whole, 1e-3):
            hint = "normalise within each group (rows with the same id in `groups`), not over the whole batch"
        elif any(abs(x) > TOL and y == 0.0 for x, y in zip(got, expected, strict=True)):
            hint = "a group whose returns are all equal gets exactly 0"
        raise _mismatch(
            "GRPO advantage", f"  returns: {_fmt(returns)}\n  groups:  {groups}", got, expected, hint
        )
    return f"correct: your GRPO advantages match rspo.core.advantages.grpo on {n} random batches"


def _partition(groups, n: int) -> list[frozenset[int]]:
    try:
        parts = [frozenset(int(i) for i in g) for g in groups]
    except (TypeError, ValueError) as err:
        raise Wrong(f"the groups should be a list of lists of row indices, got {groups!r}") from err
    rows = [i for g in groups for i in g]
    if sorted(int(i) for i in rows) != list(range(n)):
        raise Wrong(
            f"every row 0..{n - 1} must be in exactly one group (singletons too); yours hold rows {sorted(rows)}"
        )
    return parts


def check_anchor_groups(fn, task_ids=None, anchors=None) -> str:
    """Notebook 02: ``fn(task_ids, anchors) -> list of lists of row indices``, GiGPO's anchor-state
    groups (eq. 6: rows of one task group acting on the same state), as ``rspo.core.advantages`` forms them."""
    from rspo.core.advantages import _dense_ids

    rng = random.Random(0)
    cases = [([0, 0, 0, 1, 1, 1], ["hall", "kitchen", "hall", "hall", "hall", "yard"])]
    if task_ids is not None:
        cases.insert(0, (list(task_ids), list(anchors)))
    for _ in range(20):
        n = rng.randint(2, 14)
        cases.append(([rng.randint(0, 2) for _ in range(n)], [rng.choice("abcd") * 3 for _ in range(n)]))
    for tasks, texts in cases:
        ids = {a: k for k, a in enumerate(dict.fromkeys(texts))}
        dense = _dense_ids(torch.tensor(tasks), torch.tensor([ids[a] for a in texts])).tolist()
        expected = {frozenset(i for i, d in enumerate(dense) if d == g) for g in set(dense)}
        got = set(_partition(_call(fn, list(tasks), list(texts)), len(tasks)))
        if got == expected:
            continue
        by_text = {frozenset(i for i, a in enumerate(texts) if a == t) for t in set(texts)}
        hint = (
            "rows of different tasks never share a group, even when their state text is the same"
            if got == by_text
            else "group rows by (task id, anchor text): equal text within one task, one group"
        )
        shown = "\n".join(
            f"  row {i}: task {t}, anchor {a!r}" for i, (t, a) in enumerate(zip(tasks, texts, strict=True))
        )
        raise Wrong(
            f"anchor groups: not the kit's on this input.\n{shown}\n"
            f"  yours:    {sorted(sorted(g) for g in got)}\n  expected: {sorted(sorted(g) for g in expected)}\n"
            f"hint: {hint}"
        )
    return f"correct: your anchor-state groups match rspo.core.advantages on {len(cases)} batches"


def _step_reference(members, rewards, gamma: float) -> list[float]:
    from rspo.core.advantages import step_advantage

    flat = [(i, t) for i, r in enumerate(rewards) for t in range(len(r))]
    anchor = [1 if m in set(members) else 2 + k for k, m in enumerate(flat)]
    adv = step_advantage(
        torch.zeros(len(flat), dtype=torch.long),
        torch.tensor([i for i, _ in flat]),
        torch.tensor([rewards[i][t] for i, t in flat], dtype=torch.float64),
        torch.tensor(anchor),
        gamma=gamma,
    )
    return [float(adv[flat.index(m)]) for m in members]


def check_step_advantage(fn, members=None, rewards=None, gamma: float = 0.95) -> str:
    """Notebook 02: ``fn(members, rewards, gamma) -> list[float]``, GiGPO's step advantage of the turns
    ``members`` ((episode, turn) pairs of one anchor group) given per-turn ``rewards``, against
    :func:`rspo.core.advantages.step_advantage` on the notebook's group and on random ones."""
    rng = random.Random(0)
    cases = [] if members is None else [(list(members), rewards, gamma)]
    for _ in range(20):
        rew = []
        for _ in range(rng.randint(2, 6)):
            length = rng.randint(1, 8)
            won = rng.random() < 0.5
            rew.append(
                [
                    (10.0 if won and t == length - 1 else 0.0) - 0.1 * (rng.random() < 0.2)
                    for t in range(length)
                ]
            )
        flat = [(i, t) for i, r in enumerate(rew) for t in range(len(r))]
        cases.append(
            (sorted(rng.sample(flat, rng.randint(2, min(6, len(flat))))), rew, rng.choice([0.95, 0.6, 1.0]))
        )
    for mem, rew, g in cases:
        expected = _step_reference(mem, rew, g)
        got = _floats(_call(fn, list(mem), rew, g), "the step advantages")
        if _close(got, expected):
            continue
        hint = ""
        if len(got) != len(expected):
            hint = "one step advantage per member, in the order of `members`"
        elif _close(got, _step_reference(mem, rew, 1.0)) and g != 1.0:
            hint = "discount: R_t = sum over k >= t of gamma^(k - t) r_k"
        elif any(math.isnan(x) for x in got):
            hint = "an anchor group whose returns are all equal gets exactly 0"
        else:
            hint = "the return from turn t sums the rewards of turns t, t+1, ... of the same episode; then centre and divide by the unbiased std + 1e-6"
        raise _mismatch(
            f"step advantage (gamma = {g})",
            f"  members: {mem}\n  rewards: {rew}",
            got,
            expected,
            hint,
        )
    return f"correct: your step advantages match rspo.core.advantages.step_advantage on {len(cases)} anchor groups"


# --- notebook 03: find the bug in a PPO-clip objective --------------------------------------------------


BUG_STATEMENTS = {
    "a": "For A = +1 the colleague's objective keeps rising past r = 1 + eps: a good action can be pushed up without limit.",
    "b": "For A = -1 it is flat past r = 1 + eps: an action with a negative advantage that the update already made "
    "more likely gets no gradient pushing it back down.",
    "c": "For A = +1 it is flat below r = 1 - eps: an action with a positive advantage that the update already made "
    "less likely gets no gradient pulling it back up.",
    "d": "Between 1 - eps and 1 + eps it differs from PPO-clip's objective.",
}
BUG_TRUE = {"b", "c"}
BUG_HINTS = {
    "a": "look at the A = +1 curve right of 1 + eps: is it rising?",
    "b": "look at the A = -1 curve right of 1 + eps, and at what PPO's pessimistic min(r A, clip(r) A) does there",
    "c": "look at the A = +1 curve left of 1 - eps, and at what min(r A, clip(r) A) does there",
    "d": "inside [1 - eps, 1 + eps] clip(r) = r, so both objectives are r A there",
}


def colleague_objective(ratio: torch.Tensor, adv: torch.Tensor, eps: float = 0.2) -> torch.Tensor:
    """Notebook 03's buggy PPO-clip objective (per token, to be maximised): the min was dropped."""
    return torch.clamp(ratio, 1 - eps, 1 + eps) * adv


def objective_figure(objectives: dict[str, Callable], eps: float = 0.2, title: str = ""):
    """Per-token objectives ``f(ratio, adv, eps)`` against the ratio r in [0, 2] for A = +1 and A = -1,
    with the unclipped r A dotted (notebook 03's find-the-bug figure)."""
    from plotly.subplots import make_subplots

    r = torch.linspace(0.0, 2.0, 201, dtype=torch.float64)
    fig = make_subplots(rows=1, cols=2, subplot_titles=["advantage A = +1", "advantage A = -1"])
    dashes = ["solid", "dash", "dot"]
    for col, a in enumerate((1.0, -1.0), 1):
        adv = torch.full_like(r, a)
        fig.add_scatter(
            x=r.tolist(), y=(r * a).tolist(), name="r A (no clip)", row=1, col=col, showlegend=col == 1,
            line=dict(color="#999999", dash="dot"),
        )  # fmt: skip
        for k, (name, f) in enumerate(objectives.items()):
            fig.add_scatter(
                x=r.tolist(), y=_floats(f(r, adv, eps), name), name=name, row=1, col=col, showlegend=col == 1,
                line=dict(width=3 if k == 0 else 2, dash=dashes[k % len(dashes)]),
            )  # fmt: skip
        for x in (1 - eps, 1 + eps):
            fig.add_vline(x=x, line=dict(color="#cccccc", width=1), row=1, col=col)
        fig.update_xaxes(title_text="probability ratio r = π_new / π_old", row=1, col=col)
        fig.update_yaxes(title_text="objective (to maximise)", row=1, col=col)
    fig.update_layout(title=title or f"per-token objective against the ratio (eps = {eps})")
    return fig


def check_bug_statements(answer) -> str:
    """Notebook 03: ``answer`` the set of letters of :data:`BUG_STATEMENTS` that are true of the
    colleague's objective."""
    if answer is None:
        raise NotDone("the answer is still None")
    try:
        letters = answer.replace(",", " ").split() if isinstance(answer, str) else answer
        chosen = {str(x).strip().lower() for x in letters}
        if isinstance(answer, str) and all(len(x) > 1 and x.isalpha() for x in chosen):
            chosen = {ch for x in chosen for ch in x}  # "bc"
    except TypeError as err:
        raise Wrong(f"give a set of letters, e.g. {{'a'}}, got {answer!r}") from err
    unknown = chosen - set(BUG_STATEMENTS)
    if unknown:
        raise Wrong(f"unknown letters {sorted(unknown)}: choose among {sorted(BUG_STATEMENTS)}")
    if chosen == BUG_TRUE:
        return "correct: without the min, PPO's pessimism is gone on both sides - " + "; ".join(
            BUG_STATEMENTS[k].split(":")[0].replace("For", "for") for k in sorted(BUG_TRUE)
        )
    wrong_in = sorted(chosen - BUG_TRUE)
    missed = sorted(BUG_TRUE - chosen)
    lines = ["not yet:"]
    lines += [f"  ({k}) is not a symptom - {BUG_HINTS[k]}" for k in wrong_in]
    lines += [f"  a true symptom is missing - {BUG_HINTS[k]}" for k in missed]
    raise Wrong("\n".join(lines))


def check_clip_objective(fn) -> str:
    """Notebook 03: ``fn(ratio, adv, eps) -> objective`` per element, PPO-clip's
    ``min(r A, clip(r, 1 - eps, 1 + eps) A)``, against :func:`rspo.core.losses.ppo_clip_loss`."""
    from rspo.core.losses import ppo_clip_loss

    gen = torch.Generator().manual_seed(0)
    cases = []
    for eps in (0.2, 0.1, 0.3):
        ratio = torch.cat([torch.linspace(0.0, 2.0, 21), torch.rand(20, generator=gen) * 3])
        adv = torch.randn(ratio.shape[0], generator=gen)
        cases.append((ratio.double(), adv.double(), eps))
    for ratio, adv, eps in cases:
        logp = ratio.clamp_min(1e-12).log().unsqueeze(-1)
        loss, _ = ppo_clip_loss(
            logp, torch.zeros_like(logp), adv, torch.ones_like(logp, dtype=torch.bool), eps
        )
        expected = (-loss).tolist()
        got = _floats(_call(fn, ratio.clone(), adv.clone(), eps), "the objective")
        if _close(got, expected):
            continue
        k = next(
            (
                i
                for i, (x, y) in enumerate(zip(got, expected, strict=False))
                if abs(x - y) > TOL * max(1, abs(y))
            ),
            0,
        )
        hint = (
            "that is the colleague's objective: the min is missing"
            if _close(got, colleague_objective(ratio, adv, eps).tolist())
            else "maximise the pessimistic bound: min(r A, clip(r, 1 - eps, 1 + eps) A), elementwise"
        )
        raise Wrong(
            f"clip objective (eps = {eps}): at r = {float(ratio[k]):.3f}, A = {float(adv[k]):.3f} yours is "
            f"{got[k]:.4f}, PPO-clip's {expected[k]:.4f}.\nhint: {hint}"
        )
    return f"correct: your objective matches rspo.core.losses.ppo_clip_loss on {sum(len(c[0]) for c in cases)} ratios"


# --- notebook 04: the swap and the truncated importance weight -------------------------------------------


def check_relabel(fn, episodes=None) -> str:
    """Notebook 04: ``fn(episode, spec) -> list[float]``, an explorer episode's per-turn rewards after
    the swap, against :func:`rspo.core.swap.relabel`."""
    from rspo.core.rewards import compute_rewards
    from rspo.core.swap import relabel

    out = _reward_check(fn, "outcome", "relabelled rewards", episodes)
    ep = random_episodes(1, random.Random(1))[0]
    assert relabel([ep])[0] == compute_rewards("outcome", [ep])[0]  # the swap is the outcome reward
    return out.replace("rspo.core.rewards.compute_rewards('outcome')", "rspo.core.swap.relabel")


def check_importance_weights(fn) -> str:
    """Notebook 04: ``fn(learner_logp, behaviour_logp, mask, c) -> w`` ``(N, L)``, the truncated
    importance weight ``min(pi_A_old / pi_B, c)`` per real token and 0 on padding, against
    :func:`rspo.core.swap.importance_weights`."""
    from rspo.core.swap import importance_weights

    gen = torch.Generator().manual_seed(0)
    n = 0
    for c in (1.0, 2.0, 0.5, 5.0):
        for shape in ((4, 1), (6, 5)):
            learner = -torch.rand(shape, generator=gen, dtype=torch.float64) * 4
            behaviour = learner + torch.randn(shape, generator=gen, dtype=torch.float64)
            mask = torch.rand(shape, generator=gen) > 0.2
            mask[:, 0] = True
            expected = importance_weights(learner, behaviour, mask, c)[0]
            got = _call(fn, learner.clone(), behaviour.clone(), mask.clone(), c)
            n += 1
            got_t = (
                torch.as_tensor(got, dtype=torch.float64).detach()
                if not isinstance(got, torch.Tensor)
                else got
            )
            if tuple(got_t.shape) != tuple(expected.shape):
                raise Wrong(
                    f"importance weights: shape {tuple(got_t.shape)}, expected {tuple(expected.shape)} (one per token)"
                )
            got_t = got_t.detach().double()
            if torch.allclose(got_t, expected, atol=TOL, rtol=TOL):
                continue
            rho = torch.exp(learner - behaviour)
            hint = "w = min(exp(learner_logp - behaviour_logp), c) on real tokens"
            if torch.allclose(got_t, torch.where(mask, rho, torch.zeros_like(rho)), atol=TOL):
                hint = "truncate: no weight above c"
            elif torch.allclose(
                got_t, torch.where(mask, (1 / rho).clamp(max=c), torch.zeros_like(rho)), atol=TOL
            ):
                hint = "the ratio is learner over behaviour: pi_A_old / pi_B = exp(learner_logp - behaviour_logp)"
            elif torch.allclose(got_t, rho.clamp(max=c), atol=TOL):
                hint = "padding tokens (mask False) get weight 0"
            elif torch.allclose(
                got_t, torch.where(mask, (learner - behaviour).clamp(max=c), torch.zeros_like(rho)), atol=TOL
            ):
                hint = "the log-probs differ by log(pi_A_old / pi_B): take exp of the difference"
            k = int((got_t - expected).abs().flatten().argmax())
            raise Wrong(
                f"importance weights (c = {c}): at token {divmod(k, shape[1])} (learner logp "
                f"{float(learner.flatten()[k]):.3f}, behaviour logp {float(behaviour.flatten()[k]):.3f}, real token "
                f"{bool(mask.flatten()[k])}) yours is {float(got_t.flatten()[k]):.4f}, expected "
                f"{float(expected.flatten()[k]):.4f}.\nhint: {hint}"
            )
    return f"correct: your weights match rspo.core.swap.importance_weights on {n} random batches"


# --- notebook 05: at what m does dense stop helping? ----------------------------------------------------


def premise_gaps(root: str | Path = PREMISES_DIR, iterations: int = 30) -> dict[float, dict[str, float]]:
    """Per misalignment m of the lab's premise runs (GRPO, outcome's m = 0 runs stand for every m):
    ``final``, dense - outcome final greedy test success (mean over seeds, the last evaluation at
    ``iterations``), and ``distinct``, dense - outcome distinct successful trajectories found by half
    of the outcome learner's environment steps (as ``benchmarks/lab_premises.py`` reads P2 and P3)."""
    from rspo.study.claims import by_reward, curve, cut, final, interp, lab_runs, total_steps

    root = Path(root)
    if not root.is_dir():
        raise NotDone(f"the committed lab logs are not here ({root}): a checkout of the kit has them")
    groups = by_reward(lab_runs(root))
    outcome = [cut(r, iterations) for r in groups.get(("detour", "grpo", 0.0), {}).get("outcome", [])]
    if not outcome:
        raise NotDone(f"no outcome runs under {root}/m0")
    half = 0.5 * total_steps(outcome)

    def success(runs):
        return statistics.fmean(final(r, "eval/success", 1) for r in runs)

    def distinct(runs):
        return statistics.fmean(interp(*curve(r, "rollout/distinct_successes"), half) for r in runs)

    out = {}
    for (env, algo, m), got in sorted(groups.items(), key=lambda kv: kv[0][2]):
        dense = [cut(r, iterations) for r in got.get("dense", [])]
        if env == "detour" and algo == "grpo" and dense:
            out[m] = {
                "final": success(dense) - success(outcome),
                "distinct": distinct(dense) - distinct(outcome),
            }
    return out


def _smallest_m(answer, key: str, what: str, root) -> str:
    gaps = premise_gaps(root)
    if answer is None:
        raise NotDone("the answer is still None")
    try:
        m = float(answer)
    except (TypeError, ValueError) as err:
        raise Wrong(f"give m as a number (one of {sorted(gaps)}), got {answer!r}") from err
    below = [k for k, v in gaps.items() if v[key] < 0]
    expected = min(below) if below else math.inf
    if m not in gaps:
        raise Wrong(f"the premise runs have m in {sorted(gaps)}; {m:g} is not one of them")
    if m == expected:
        return f"correct: m = {m:g} is the smallest m at which {what} (dense - outcome {gaps[m][key]:+.3g})"
    if m > expected:
        hint = f"at m = {m:g} it does, but not first: look at the smaller m too"
    else:
        hint = f"at m = {m:g} dense - outcome is {gaps[m][key]:+.3g}: not below outcome yet"
    raise Wrong(f"not yet: {hint}")


def check_dense_ends_below(answer, root=PREMISES_DIR) -> str:
    """Notebook 05: the smallest m at which the dense learner's final greedy test success (mean over
    seeds) falls below the outcome learner's."""
    return _smallest_m(answer, "final", "the dense learner ends below the outcome learner", root)


def check_dense_explores_less(answer, root=PREMISES_DIR) -> str:
    """Notebook 05: the smallest m at which the dense learner has found fewer distinct successful
    trajectories than the outcome learner by half of the outcome learner's steps."""
    return _smallest_m(answer, "distinct", "the dense learner finds fewer distinct successes", root)


# --- the notebooks' view ---------------------------------------------------------------------------------

# name -> (check, the stub's name in the notebook and in notebooks/solutions/<notebook>.py)
CHECKS: dict[str, tuple[Callable, str]] = {
    "dense_rewards": (check_dense_rewards, "my_dense_rewards"),
    "grpo_advantage": (check_grpo_advantage, "my_grpo_advantage"),
    "anchor_groups": (check_anchor_groups, "my_anchor_groups"),
    "step_advantage": (check_step_advantage, "my_step_advantages"),
    "bug_statements": (check_bug_statements, "bug_statements"),
    "clip_objective": (check_clip_objective, "my_clip_objective"),
    "relabel": (check_relabel, "my_relabel"),
    "importance_weights": (check_importance_weights, "my_importance_weights"),
    "dense_ends_below": (check_dense_ends_below, "m_dense_ends_below"),
    "dense_explores_less": (check_dense_explores_less, "m_dense_explores_less"),
}
# the exercises of each notebook, in order
NOTEBOOK_EXERCISES = {
    "01_environments_and_rewards": ["dense_rewards"],
    "02_credit_assignment": ["grpo_advantage", "anchor_groups", "step_advantage"],
    "03_sparse_vs_dense_baselines": ["bug_statements", "clip_objective"],
    "04_rspo": ["relabel", "importance_weights"],
    "05_analysis": ["dense_ends_below", "dense_explores_less"],
}


def load_solutions(notebook: str, folder: Path = SOLUTIONS_DIR):
    """The module ``notebooks/solutions/<notebook>.py`` (a checkout of the kit has it)."""
    path = Path(folder) / f"{notebook}.py"
    if not path.is_file():
        raise FileNotFoundError(
            f"no solutions for {notebook} at {path} (a checkout of the kit has notebooks/solutions/)"
        )
    spec = importlib.util.spec_from_file_location(f"rspo_solutions_{notebook}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Exercises:
    """A notebook's exercises: ``ex.check(name, answer, **data)`` runs the check of :data:`CHECKS`.

    ``mode="student"``: an untouched stub prints "not done yet" (the notebook goes on), a wrong answer
    raises :class:`Wrong`, a right one prints the success line. ``mode="solutions"``: the solution of
    ``notebooks/solutions/<notebook>.py`` is checked in place of ``answer`` and must pass. ``check``
    returns the answer it checked. :meth:`summary` prints what is done (and, with solutions, asserts all).
    """

    def __init__(self, notebook: str, mode: str = "student", solutions_dir: Path = SOLUTIONS_DIR, echo=print):
        if mode not in MODES:
            raise ValueError(f"unknown exercise mode {mode!r}; choose one of: {', '.join(MODES)}")
        self.notebook, self.mode, self.echo = notebook, mode, echo
        self.names = NOTEBOOK_EXERCISES.get(notebook, [])
        self.solutions = load_solutions(notebook, solutions_dir) if mode == "solutions" else None
        self.status: dict[str, str] = {}

    def check(self, name: str, answer=None, **data):
        if name not in CHECKS:
            raise ValueError(f"unknown exercise {name!r}; choose one of: {', '.join(CHECKS)}")
        fn, stub = CHECKS[name]
        number = self.names.index(name) + 1 if name in self.names else "?"
        label = f"Exercise {number} ({stub})"
        if self.solutions is not None:
            if not hasattr(self.solutions, stub):
                raise AssertionError(f"{label}: notebooks/solutions/{self.notebook}.py defines no {stub}")
            answer = getattr(self.solutions, stub)
        try:
            message = fn(answer, **data)
        except NotDone as err:
            self.status[name] = "not done"
            if self.mode == "solutions":
                raise AssertionError(f"{label}: the solution does not fill the stub ({err})") from err
            self.echo(
                f"○ {label}: not done yet - {err}. Fill in the cell marked YOUR CODE HERE and run this cell again."
            )
            return answer
        except Wrong as err:
            self.status[name] = "wrong"
            raise Wrong(f"{label}: {err}") from None
        self.status[name] = "done"
        self.echo(f"✓ {label}: {message}")
        return answer

    def summary(self) -> dict[str, str]:
        done = [n for n in self.names if self.status.get(n) == "done"]
        self.echo(
            f"exercises ({self.mode}): {len(done)} of {len(self.names)} done"
            + (
                ""
                if len(done) == len(self.names)
                else f"; to do: {', '.join(CHECKS[n][1] for n in self.names if n not in done)}"
            )
        )
        if self.mode == "solutions":
            assert len(done) == len(self.names), f"with the solutions every exercise must pass: {self.status}"
        return dict(self.status)
