"""Advantage estimators as pure functions on flat per-turn tensors (docs/design.md §6).

Every estimator takes one row per turn sample, rows ordered by trajectory then turn:

===============  =====  ========================================================================
symbol           shape  meaning
===============  =====  ========================================================================
task_ids         (N,)   long; rows with equal ids belong to one task group (same task, G copies)
traj_ids         (N,)   long; rows with equal ids belong to one trajectory (unique across tasks)
step_rewards     (N,)   float; the reward r_t received for this turn's action
episode_returns  (N,)   float; the trajectory's return R(tau), repeated on each of its rows
anchor_ids       (N,)   long; integer id of the anchor (raw state text); equal id = same state
values           (N,)   float; critic value V(s_t) of this turn's state (GAE only)
===============  =====  ========================================================================

and returns per-turn advantages ``(N,)`` in the dtype of its reward input (``gae`` also returns
the value targets). :func:`broadcast_to_tokens` spreads them over tokens. Groups are dense integer
ids from ``torch.unique(return_inverse=True)``; sums and counts are scatters; the only Python loop
runs over the turn index (at most the horizon), never over samples. Arithmetic is float64 inside.

Shared decisions: std is the *unbiased* (n - 1) one, as ``torch.std`` in verl-agent;
``normalize="std"`` divides by ``std + 1e-6``, ``"none"`` only centres. A group whose values are all
equal, a group of one included, gives *exactly* 0: ``x - mean`` of equal floats is not always 0 in
floating point, and ``residue / (0 + 1e-6)`` is noise of order 1e-10 (float64) to 1e-2 (float32).

GiGPO equation numbers are those the authors attach to their own code (verl-agent,
``gigpo/core_gigpo.py``); other papers are cited by section where we could not check a number.
"""

from __future__ import annotations

import inspect

import torch

from rspo.core.registry import EPISODE_STATS, ESTIMATORS, NORMALIZE

F64 = torch.float64


def _choice(kind: str, value: str, choices) -> None:
    if value not in choices:
        raise ValueError(f"unknown {kind} {value!r}; choose one of: {', '.join(choices)}")


def _vec(x, name: str, n: int | None = None) -> torch.Tensor:
    x = torch.as_tensor(x)
    if x.dim() != 1 or (n is not None and x.shape[0] != n):
        raise ValueError(f"{name} must have shape ({n if n is not None else 'N'},), got {tuple(x.shape)}")
    if x.is_floating_point():
        bad = ~torch.isfinite(x)
        if bool(bad.any()):
            rows = bad.nonzero().flatten().tolist()
            raise ValueError(
                f"{name} is not finite: {float(x[rows[0]])} at row {rows[0]} ({len(rows)} of {len(x)} rows "
                "nan/inf); rewards, returns and values must be finite numbers"
            )
    return x


def _out_dtype(x: torch.Tensor) -> torch.dtype:
    return x.dtype if x.is_floating_point() else torch.get_default_dtype()


def _dense_ids(*keys: torch.Tensor) -> torch.Tensor:
    """Dense group ids ``(N,)`` in ``[0, G)``: rows with equal keys (all of them) share an id."""
    key = keys[0] if len(keys) == 1 else torch.stack([k.long() for k in keys], dim=1)  # (N,) or (N, K)
    return torch.unique(key, dim=0, return_inverse=True)[1]


def _group_normalize(x: torch.Tensor, group: torch.Tensor, normalize: str, eps: float) -> torch.Tensor:
    """``(x - mean_g) / F_g`` within groups; ``x (M,)`` float64, ``group (M,)`` dense ids -> ``(M,)``.

    F = unbiased std + eps (``"std"``) or 1 (``"none"``); all-equal groups (singletons too) -> 0.
    Each group is computed divided by a power of two near its largest ``|x|`` - exact, so the result
    is the same bit for bit - and large finite values (returns of 1e200) do not overflow the squares.
    """
    _choice("normalize", normalize, NORMALIZE)
    if x.numel() == 0:
        return x.clone()
    g = int(group.max()) + 1
    count = torch.bincount(group, minlength=g).to(F64)  # (G,)
    absmax = torch.zeros(g, dtype=F64, device=x.device).scatter_reduce(0, group, x.abs(), "amax")  # (G,)
    scale = torch.ldexp(torch.ones_like(absmax), torch.frexp(absmax).exponent - 1)  # (G,) 2^k <= absmax
    xs = x / scale[group]  # (M,) in (-2, 2)
    mean = torch.zeros(g, dtype=F64, device=x.device).index_add_(0, group, xs) / count  # (G,)
    out = xs - mean[group]  # (M,)
    if normalize == "std":
        sq = torch.zeros(g, dtype=F64, device=x.device).index_add_(0, group, out * out)  # (G,)
        std = (sq / (count - 1).clamp(min=1)).sqrt()  # (G,) unbiased, of x / scale
        out = out / (std + eps / scale)[group]  # = (x - mean x) / (std x + eps)
    else:
        out = out * scale[group]
    hi = torch.full((g,), -torch.inf, dtype=F64, device=x.device).scatter_reduce(0, group, x, "amax")
    lo = torch.full((g,), torch.inf, dtype=F64, device=x.device).scatter_reduce(0, group, x, "amin")
    return out.masked_fill((hi == lo)[group], 0.0)


def _episodes(task_ids, traj_ids, episode_returns):
    """Checked inputs -> ``ret (N,), task (N,), traj (N,) dense, per_traj (M,) float64, traj_task (M,)``."""
    task = _vec(task_ids, "task_ids")
    n = task.shape[0]
    ret = _vec(episode_returns, "episode_returns", n)
    traj = _dense_ids(_vec(traj_ids, "traj_ids", n))  # (N,)
    m, rows = (int(traj.max()) + 1 if n else 0), torch.arange(n, device=traj.device)
    first = torch.full((m,), n, dtype=torch.long, device=traj.device).scatter_reduce(0, traj, rows, "amin")
    for x, name in ((task, "task_ids"), (ret, "episode_returns")):  # one value per trajectory
        if not torch.equal(x[first][traj], x):
            raise ValueError(f"{name} must be constant within each trajectory (rows with equal traj_ids)")
    return ret, task, traj, ret[first].to(F64), task[first]


def turn_index(traj_ids) -> torch.Tensor:
    """Position ``t`` of each row within its trajectory: ``(N,) long -> (N,) long``, 0 = first turn.

    Rows of one trajectory must appear in turn order (they need not be contiguous).
    """
    traj = _dense_ids(_vec(traj_ids, "traj_ids"))  # (N,)
    order = torch.argsort(traj, stable=True)  # (N,) rows grouped by trajectory, turn order kept
    counts = torch.bincount(traj)  # (M,)
    starts = torch.cumsum(counts, 0) - counts  # (M,)
    turn = torch.empty_like(traj)
    turn[order] = torch.arange(traj.shape[0], device=traj.device) - starts[traj[order]]
    return turn


def _padded(x: torch.Tensor, traj: torch.Tensor, turn: torch.Tensor) -> torch.Tensor:
    """Rows ``(N,)`` -> ``(M, L + 1)`` matrix [trajectory, turn], zero padded (one spare column)."""
    m = int(traj.max()) + 1
    out = torch.zeros(m, int(turn.max()) + 2, dtype=x.dtype, device=x.device)  # (M, L+1)
    out[traj, turn] = x
    return out


def discounted_returns(traj_ids, step_rewards, gamma=1.0) -> torch.Tensor:
    """Reward-to-go per turn, GiGPO eq. (5): ``R_t = sum_{k>=t} gamma^(k-t) r_k`` within each trajectory.

    ==============  =====  =========================================================
    Symbol          Shape  Meaning
    ==============  =====  =========================================================
    traj_ids        (N,)   trajectory of each row (rows in turn order)
    step_rewards    (N,)   r_t
    gamma           ()     discount, default 1.0 (undiscounted); ``gigpo`` uses 0.95
    returns         (N,)   R_t, in the dtype of ``step_rewards``
    ==============  =====  =========================================================
    """
    traj_ids = _vec(traj_ids, "traj_ids")
    r = _vec(step_rewards, "step_rewards", traj_ids.shape[0])
    if r.numel() == 0:
        return r.to(_out_dtype(r))
    traj, turn = _dense_ids(traj_ids), turn_index(traj_ids)
    rew = _padded(r.to(F64), traj, turn)  # (M, L+1)
    ret = torch.zeros_like(rew)  # (M, L+1); column L stays 0
    for t in range(rew.shape[1] - 2, -1, -1):  # loop over turn index only
        ret[:, t] = rew[:, t] + gamma * ret[:, t + 1]
    return ret[traj, turn].to(_out_dtype(r))


def grpo(
    task_ids, traj_ids, episode_returns, *, normalize="std", episode_stats="trajectory", eps=1e-6
) -> torch.Tensor:
    """GRPO outcome advantage: the episode return normalised within its task group, on every turn.

    DeepSeekMath (arXiv 2402.03300) section 4.1.2, outcome supervision ``A_i = (r_i - mean r) / std r``
    inside the GRPO objective (eq. 3); the same quantity is GiGPO's episode advantage, eq. (3) of
    arXiv 2505.10978: ``A^E(tau_i) = (R(tau_i) - mean_j R(tau_j)) / F``.

    ===============  =====  ==================================================================
    Symbol           Shape  Meaning
    ===============  =====  ==================================================================
    task_ids         (N,)   task group of each row
    traj_ids         (N,)   trajectory of each row
    episode_returns  (N,)   R(tau), constant within a trajectory (checked)
    normalize        ()     ``"std"`` (default): F = unbiased std + eps; ``"none"``: F = 1
    episode_stats    ()     ``"trajectory"`` (default): mean/std over the group's trajectories,
                            one value each (the paper); ``"turn"``: over the group's turn rows, so
                            a trajectory of k turns counts k times (verl-agent's GiGPO); with
                            equal lengths both agree, up to the n-1 (Bessel) factor of the std
    eps              ()     1e-6
    advantages       (N,)   A^E of the row's trajectory, dtype of ``episode_returns``
    ===============  =====  ==================================================================

    A task group with a single trajectory, or whose returns are all equal, gets exactly 0
    (verl/verl-agent give a group of one sample mean 0 and std 1, i.e. the raw return R).
    """
    _choice("episode_stats", episode_stats, EPISODE_STATS)
    ret, task, traj, per_traj, traj_task = _episodes(task_ids, traj_ids, episode_returns)
    if episode_stats == "trajectory":
        adv = _group_normalize(per_traj, _dense_ids(traj_task), normalize, eps)[traj]  # (N,)
    else:
        adv = _group_normalize(per_traj[traj], _dense_ids(task), normalize, eps)  # (N,)
    return adv.to(_out_dtype(ret))


def rloo(task_ids, traj_ids, episode_returns) -> torch.Tensor:
    """REINFORCE leave-one-out: ``A_i = R_i - 1/(n-1) sum_{j != i} R_j`` over the n trajectories of a task.

    Ahmadian et al. 2024 (arXiv 2402.14740), section 3, the RLOO estimator (after Kool et al. 2019).
    Equal to ``n/(n-1) * (R_i - mean R)``; no division by a std.

    ===============  =====  =======================================================
    Symbol           Shape  Meaning
    ===============  =====  =======================================================
    task_ids         (N,)   task group of each row
    traj_ids         (N,)   trajectory of each row
    episode_returns  (N,)   R(tau), constant within a trajectory (checked)
    advantages       (N,)   A_i of the row's trajectory, dtype of ``episode_returns``
    ===============  =====  =======================================================

    A group of one trajectory has no baseline and gets 0; a group of equal returns gets exactly 0.
    """
    ret, _, traj, per_traj, traj_task = _episodes(task_ids, traj_ids, episode_returns)
    group = _dense_ids(traj_task)  # (M,)
    count = torch.bincount(group).to(F64)[group]  # (M,) group size of each trajectory
    centred = _group_normalize(per_traj, group, "none", 0.0)  # (M,) R_i - mean; 0 for flat groups
    adv = centred * count / (count - 1).clamp(min=1)  # (M,)
    return adv[traj].to(_out_dtype(ret))


def turn_level(
    task_ids,
    traj_ids,
    step_rewards,
    *,
    gamma=1.0,
    form="return",
    group_by="task_turn",
    normalize="std",
    eps=1e-6,
) -> torch.Tensor:
    """Turn-level group-relative advantage, MT-GRPO style (arXiv 2505.11821, turn-level advantage).

    MT-GRPO (two turns): ``A_1 = Â^I + alpha Â^O``, ``A_2 = Â^O``, with Â^I, Â^O the intermediate and
    outcome rewards normalised over the group's rollouts (the authors' code weighs Â^I instead; the
    same at their default alpha = 1). For T turns, t the turn index, norm within ``group_by`` groups:
    ``form="return"`` (default) normalises the reward-to-go, ``A_t = norm(sum_{k>=t} gamma^(k-t) r_k)``;
    ``form="mt_grpo"`` sums normalised rewards, ``A_t = sum_{k>=t} gamma^(k-t) norm(r_k)`` -- with two
    turns and gamma = alpha, MT-GRPO exactly.

    ============  =====  =======================================================================
    Symbol        Shape  Meaning
    ============  =====  =======================================================================
    task_ids      (N,)   task group of each row
    traj_ids      (N,)   trajectory of each row (rows in turn order)
    step_rewards  (N,)   per-turn reward r_t (process and/or outcome reward, as the caller chose)
    gamma         ()     1.0 (MT-GRPO sums undiscounted)
    form          ()     ``"return"`` (default) or ``"mt_grpo"``, see above
    group_by      ()     ``"task_turn"`` (default): rows of one task *and* one turn index, as
                         MT-GRPO compares turn t with turn t; ``"task"``: all rows of the task
    normalize     ()     ``"std"`` (default) or ``"none"``; eps = 1e-6
    advantages    (N,)   dtype of ``step_rewards``; 0 in groups of one (e.g. the only trajectory
                         still running at turn t) and in flat groups
    ============  =====  =======================================================================
    """
    _choice("form", form, ("return", "mt_grpo"))
    _choice("group_by", group_by, ("task_turn", "task"))
    task_ids = _vec(task_ids, "task_ids")
    traj_ids = _vec(traj_ids, "traj_ids", task_ids.shape[0])
    r = _vec(step_rewards, "step_rewards", task_ids.shape[0])
    keys = (task_ids, turn_index(traj_ids)) if group_by == "task_turn" else (task_ids,)
    group = _dense_ids(*keys)  # (N,)
    if form == "return":
        adv = _group_normalize(discounted_returns(traj_ids, r.to(F64), gamma), group, normalize, eps)
    else:
        adv = discounted_returns(traj_ids, _group_normalize(r.to(F64), group, normalize, eps), gamma)
    return adv.to(_out_dtype(r))


def step_advantage(
    task_ids, traj_ids, step_rewards, anchor_ids, *, gamma=0.95, normalize="std", eps=1e-6
) -> torch.Tensor:
    """GiGPO step advantage, eqs. (5)-(7) of arXiv 2505.10978.

    Anchor-state groups (eq. 6): all rows of one task group with the same ``anchor_ids`` (exact
    match). Discounted step return (eq. 5): ``R_t = sum_{k>=t} gamma^(k-t) r_k`` per trajectory.
    Step advantage (eq. 7): ``A^S = (R_t - mean over its anchor group) / F``.

    ============  =====  ============================================================
    Symbol        Shape  Meaning
    ============  =====  ============================================================
    task_ids      (N,)   task group of each row
    traj_ids      (N,)   trajectory of each row (rows in turn order)
    step_rewards  (N,)   r_t
    anchor_ids    (N,)   anchor state of the row
    gamma         ()     0.95
    normalize     ()     ``"std"`` (default): F = unbiased std + eps; ``"none"``: F = 1
    eps           ()     1e-6
    advantages    (N,)   A^S, dtype of ``step_rewards``
    ============  =====  ============================================================

    A singleton anchor group gives exactly 0 (so does verl-agent, via mean = the value, std = 1);
    an anchor group whose returns are all equal gives exactly 0 (verl-agent: float residue / 1e-6).
    """
    task_ids = _vec(task_ids, "task_ids")
    n = task_ids.shape[0]
    r = _vec(step_rewards, "step_rewards", n)
    anchors = _vec(anchor_ids, "anchor_ids", n)
    returns = discounted_returns(_vec(traj_ids, "traj_ids", n), r.to(F64), gamma)  # (N,) eq. 5
    group = _dense_ids(task_ids, anchors)  # (N,) eq. 6
    return _group_normalize(returns, group, normalize, eps).to(_out_dtype(r))  # eq. 7


def gigpo(
    task_ids,
    traj_ids,
    step_rewards,
    episode_returns,
    anchor_ids,
    *,
    gamma=0.95,
    omega=1.0,
    normalize="std",
    episode_stats="trajectory",
    eps=1e-6,
) -> torch.Tensor:
    """GiGPO combined advantage, eq. (8) of arXiv 2505.10978: ``A = A^E + omega * A^S``.

    ``A^E`` is :func:`grpo` (eq. 3) and ``A^S`` is :func:`step_advantage` (eqs. 5-7); call them for
    the two parts. ``omega = 0`` gives :func:`grpo` exactly.

    ===============  =====  ================================================================
    Symbol           Shape  Meaning
    ===============  =====  ================================================================
    task_ids         (N,)   task group of each row
    traj_ids         (N,)   trajectory of each row (rows in turn order)
    step_rewards     (N,)   r_t, discounted into the step returns
    episode_returns  (N,)   R(tau) for the episode advantage, constant within a trajectory
    anchor_ids       (N,)   anchor state of the row
    gamma            ()     0.95 (paper setting)
    omega            ()     1.0 (paper setting)
    normalize        ()     ``"std"`` (default, "GiGPO w/ std", verl-agent ``mean_std_norm``) or
                            ``"none"`` ("w/o std", ``mean_norm``); one F for both levels, as theirs
    episode_stats    ()     ``"trajectory"`` (default, the paper's formula) or ``"turn"``
                            (verl-agent: stats over turn rows, long trajectories weigh more)
    eps              ()     1e-6, added to the std (verl-agent's epsilon)
    advantages       (N,)   dtype of ``step_rewards``
    ===============  =====  ================================================================

    Deliberate differences from verl-agent: a task group of one trajectory gets A^E = 0 (verl-agent:
    mean 0, std 1, so A^E = R for a group of one sample); zero-variance groups give exactly 0 at both
    levels; anchor groups are integer ids, not random uuids; exact-match grouping only (verl-agent
    also offers a text-similarity threshold, which the caller can emulate by mapping similar anchors
    to one id).
    """
    r, ret = torch.as_tensor(step_rewards), torch.as_tensor(episode_returns).to(F64)  # float64 parts
    ep = grpo(task_ids, traj_ids, ret, normalize=normalize, episode_stats=episode_stats, eps=eps)  # eq. 3
    st = step_advantage(task_ids, traj_ids, r.to(F64), anchor_ids, gamma=gamma, normalize=normalize, eps=eps)
    return (ep + omega * st).to(_out_dtype(r))  # eq. 8


def gae(
    traj_ids, step_rewards, values, *, gamma=1.0, lam=1.0, dones=None, bootstrap_values=None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Turn-level GAE(gamma, lambda) for PPO with a value head (Schulman et al. 2015, arXiv 1506.02438).

    Per trajectory: ``delta_t = r_t + gamma V_{t+1} (1 - done_t) - V_t`` (section 3) and
    ``A_t = sum_l (gamma lambda)^l delta_{t+l}`` (eq. 16); value targets ``returns = A + V``.
    Defaults gamma = lambda = 1, as MT-PPO (arXiv 2505.11821) and verl: A_t is then the Monte Carlo
    return minus V_t. A turn is one step: one value per turn, not per token.

    ================  =====  =================================================================
    Symbol            Shape  Meaning
    ================  =====  =================================================================
    traj_ids          (N,)   trajectory of each row (rows in turn order)
    step_rewards      (N,)   r_t
    values            (N,)   V(s_t) of the row's state
    gamma, lam        ()     1.0, 1.0
    dones             (N,)   bool, optional: the episode *terminated* after this turn (no
                             bootstrap). Default None: every trajectory's last turn is terminal
    bootstrap_values  (N,)   optional V(s_T) after a trajectory's last turn, read on its last row
                             only and used when that row is not done (truncated at the horizon).
                             Default None: 0, so an unfinished last turn bootstraps 0
    advantages        (N,)   A_t, dtype of ``values``
    returns           (N,)   A_t + V_t, the value-loss targets
    ================  =====  =================================================================
    """
    traj_ids = _vec(traj_ids, "traj_ids")
    n = traj_ids.shape[0]
    r, v = _vec(step_rewards, "step_rewards", n).to(F64), _vec(values, "values", n)
    out = _out_dtype(v)
    if n == 0:
        return v.to(out), v.to(out)
    traj, turn = _dense_ids(traj_ids), turn_index(traj_ids)
    last = turn == (torch.bincount(traj) - 1)[traj]  # (N,) last row of its trajectory
    done = last if dones is None else _vec(dones, "dones", n).bool()  # (N,)
    boot = _vec(v.new_zeros(n) if bootstrap_values is None else bootstrap_values, "bootstrap_values", n)
    v_next = torch.where(last, boot.to(F64), _padded(v.to(F64), traj, turn)[traj, turn + 1])  # (N,)
    delta = r + gamma * v_next * (~done) - v.to(F64)  # (N,)
    d, keep = _padded(delta, traj, turn), _padded((~done).to(F64), traj, turn)  # (M, L+1)
    adv = torch.zeros_like(d)  # (M, L+1)
    for t in range(d.shape[1] - 2, -1, -1):  # loop over turn index only
        adv[:, t] = d[:, t] + gamma * lam * keep[:, t] * adv[:, t + 1]
    a = adv[traj, turn]  # (N,)
    return a.to(out), (a + v.to(F64)).to(out)


# ESTIMATORS (rspo.core.registry) names each estimator above, the algo that trains with it, the TrainConfig
# fields it takes and whether it needs a critic: a new estimator is a function here and an entry there
BATCH_FIELDS = tuple(
    "task_ids traj_ids step_rewards episode_returns anchor_ids values dones bootstrap_values".split()
)


def compute_advantages(name: str, batch: dict, **options) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Run estimator ``name`` of :data:`rspo.core.registry.ESTIMATORS` on a batch: ``-> (advantages (N,), returns (N,) | None)``.

    ``batch`` maps :data:`BATCH_FIELDS` names to ``(N,)`` tensors; each estimator takes the fields its
    signature names and ignores the rest. ``options`` go to the estimator as keywords (unknown ones
    raise TypeError). ``returns`` are the value targets (``gae``) or None (critic-free estimators).
    """
    fn = ESTIMATORS.entry(name).function
    params = inspect.signature(fn).parameters
    missing = [
        p for p, s in params.items() if p in BATCH_FIELDS and s.default is s.empty and batch.get(p) is None
    ]
    if missing:
        raise ValueError(f"estimator {name!r} needs batch fields {missing}")
    fields = {p: batch[p] for p in params if p in BATCH_FIELDS and batch.get(p) is not None}
    out = fn(**fields, **options)
    return out if isinstance(out, tuple) else (out, None)


def broadcast_to_tokens(turn_adv, *, response_mask=None, token_turn_index=None) -> torch.Tensor:
    """Spread per-turn advantages ``(N,)`` over tokens; give exactly one of the two layouts.

    ================  ======  ====================================================================
    Symbol            Shape   Meaning
    ================  ======  ====================================================================
    turn_adv          (N,)    advantage of each turn row
    response_mask     (N, T)  one token row per turn (the kit's per-step prompts): 1/True on the
                              action tokens to train, 0 elsewhere -> ``turn_adv[:, None] * mask``
    token_turn_index  (B, T)  long, one token row per sequence holding several turns: the turn row
                              (index into ``turn_adv``) each token's action belongs to, -1 for
                              tokens of no action (prompt, observation, padding) -> 0 there
    result            (N, T)  or (B, T), dtype of ``turn_adv``
    ================  ======  ====================================================================
    """
    adv = _vec(turn_adv, "turn_adv")
    if (response_mask is None) == (token_turn_index is None):
        raise ValueError("give exactly one of response_mask (N, T) or token_turn_index (B, T)")
    if response_mask is not None:
        mask = torch.as_tensor(response_mask)
        if mask.dim() != 2 or mask.shape[0] != adv.shape[0]:
            raise ValueError(f"response_mask must have shape ({adv.shape[0]}, T), got {tuple(mask.shape)}")
        return adv[:, None] * mask.to(adv.dtype)  # (N, T)
    index = torch.as_tensor(token_turn_index)
    if (
        index.dim() != 2
        or index.is_floating_point()
        or (index.numel() and not -1 <= index.min() <= index.max() < len(adv))
    ):
        raise ValueError(f"token_turn_index must be a (B, T) integer tensor in [-1, {len(adv) - 1}]")
    out = adv[index.clamp(min=0).long()]  # (B, T)
    return out.masked_fill(index < 0, 0.0)
