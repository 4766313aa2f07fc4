"""From episodes to a flat turn batch (rewards -> advantages -> weights), and the PPO-clip update.

:func:`build_batch` flattens episodes into the per-turn tensors of :mod:`rspo.core.advantages` and runs
the config's estimator; :func:`ppo_update` is the token-level PPO-clip loss with KL to the reference
(+ value loss for PPO), aggregated by :func:`rspo.core.losses.turn_weights`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import torch

from rspo.core.advantages import compute_advantages
from rspo.core.losses import kl_k3, ppo_clip_loss, turn_weights
from rspo.core.policies.base import TurnInput
from rspo.core.registry import ESTIMATORS
from rspo.core.rollout import Episode, Turn


def turn_inputs(turns: list[Turn]) -> list[TurnInput]:
    return [TurnInput(t.prompt, t.candidates, t.choice, t.action_ids) for t in turns]


def score_turns(
    policy, turns: list[Turn], cfg, autocast, *, reference: bool = False, values: bool = False
) -> tuple[list[list[float]], list[float] | None]:
    """Per-token log-probs of each turn's action under ``policy`` (or its reference), no gradient,
    in micro-batches; with ``values`` also V(s) from the value head."""
    logps, vals = [], []
    for s in range(0, len(turns), cfg.micro_batch):
        chunk = turns[s : s + cfg.micro_batch]
        with torch.no_grad(), autocast():
            out = policy.logprobs(
                turn_inputs(chunk), reference=reference, values=values, temperature=cfg.temperature
            )
        logps += [out.logp[j][out.mask[j]].float().tolist() for j in range(len(chunk))]
        if values:
            vals += out.values.float().tolist()
    return logps, (vals if values else None)


@dataclass
class TurnBatch:
    """One iteration's turns, flat, with their advantages and loss weights (N turns).

    =================  ======  ==========================================================
    field              shape   meaning
    =================  ======  ==========================================================
    task_ids           (N,)    group (task within the iteration) of each turn
    traj_ids           (N,)    trajectory of each turn
    step_rewards       (N,)    reward of the turn under the batch's reward mode
    episode_returns    (N,)    the trajectory's return, repeated on its turns
    anchor_ids         (N,)    integer id of the turn's anchor (state) text
    values             (N,)    V(s) at collection (PPO) or None
    adv                (N,)    advantages from the config's estimator
    returns            (N,)    value targets (PPO) or None
    weights            (N,)    loss weights, summing to 1 over the turns trained on (+ lambda
                               over off-policy turns when a swap batch is joined)
    proximal           {i: L}  off-policy turns: log pi_A_old of the action tokens (the PPO ratio's
                               denominator); on-policy turns use their behaviour log-probs
    is_weights         {i: L}  off-policy turns: truncated importance weights min(pi_A_old/pi_B, c)
    =================  ======  ==========================================================
    """

    turns: list[Turn]
    task_ids: torch.Tensor
    traj_ids: torch.Tensor
    step_rewards: torch.Tensor
    episode_returns: torch.Tensor
    anchor_ids: torch.Tensor
    values: torch.Tensor | None
    adv: torch.Tensor
    returns: torch.Tensor | None
    weights: torch.Tensor
    no_signal_group_ids: set[int] = field(default_factory=set)
    proximal: dict[int, list[float]] = field(default_factory=dict)
    is_weights: dict[int, list[float]] = field(default_factory=dict)

    @property
    def no_signal_groups(self) -> int:
        return len(self.no_signal_group_ids)

    def inputs(self, index) -> list[TurnInput]:
        return turn_inputs([self.turns[i] for i in index])

    def metrics(self) -> dict:
        n_traj = int(self.traj_ids.unique().numel()) if len(self.traj_ids) else 0
        first = torch.ones_like(self.traj_ids, dtype=torch.bool)
        if len(self.traj_ids) > 1:
            first[1:] = self.traj_ids[1:] != self.traj_ids[:-1]
        adv = self.adv.double()
        return {
            "reward/return": float(self.episode_returns[first].double().mean()) if n_traj else 0.0,
            "reward/step_mean": float(self.step_rewards.double().mean()) if len(adv) else 0.0,
            "adv/mean": float(adv.mean()) if len(adv) else 0.0,
            "adv/std": float(adv.std()) if len(adv) > 1 else 0.0,
            "adv/abs_mean": float(adv.abs().mean()) if len(adv) else 0.0,
            "adv/zero_frac": float((adv == 0).double().mean()) if len(adv) else 0.0,
            "rollout/no_signal_groups": self.no_signal_groups,
            "rollout/no_signal_frac": self.no_signal_groups / max(int(self.task_ids.unique().numel()), 1),
        }


def build_batch(
    episodes: list[Episode], rewards: list[list[float]], cfg, values: list[float] | None = None
) -> TurnBatch:
    """Flatten ``episodes`` with their per-turn ``rewards``; run ``cfg.estimator``; set loss weights.

    ``values`` (one per turn) replaces the values stored at collection for GAE - the learner's critic
    on explorer turns."""
    turns = [t for ep in episodes for t in ep.turns]
    task_ids = torch.tensor([ep.group for ep in episodes for _ in ep.turns], dtype=torch.long)
    traj_ids = torch.tensor([i for i, ep in enumerate(episodes) for _ in ep.turns], dtype=torch.long)
    step_rewards = torch.tensor([r for rs in rewards for r in rs], dtype=torch.float32)
    episode_returns = torch.tensor([sum(rs) for rs in rewards for _ in rs], dtype=torch.float32)
    anchors: dict[str, int] = {}
    anchor_ids = torch.tensor([anchors.setdefault(t.anchor, len(anchors)) for t in turns], dtype=torch.long)
    gae_values = None  # the critic's values (GAE): the given ones, else those stored at collection
    if cfg.critic:
        if values is None:
            values = [t.value if t.value is not None else 0.0 for t in turns]
        gae_values = torch.tensor(values, dtype=torch.float32)
    fields = dict(
        task_ids=task_ids,
        traj_ids=traj_ids,
        step_rewards=step_rewards,
        episode_returns=episode_returns,
        anchor_ids=anchor_ids,
        values=gae_values,
    )
    options = ESTIMATORS.entry(cfg.estimator).config_options(cfg)
    adv, returns = compute_advantages(cfg.estimator, fields, **options) if turns else (torch.zeros(0), None)
    # groups without signal: every advantage of the group is exactly zero
    no_signal: set[int] = set()
    if len(adv):
        nonzero = torch.zeros(int(task_ids.max()) + 1, dtype=torch.long).index_add_(
            0, task_ids, (adv != 0).long()
        )
        no_signal = {int(g) for g in task_ids.unique() if nonzero[g] == 0}
    keep = torch.ones(len(turns), dtype=torch.bool)
    if cfg.no_signal == "skip" and no_signal:
        keep = ~torch.isin(task_ids, torch.tensor(sorted(no_signal)))
    n_tokens = torch.tensor([max(len(t.token_logprobs), 1) for t in turns], dtype=torch.long)
    weights = torch.zeros(len(turns))
    if keep.any():
        weights[keep] = turn_weights(traj_ids[keep], n_tokens[keep], cfg.loss_agg)
    return TurnBatch(
        turns,
        task_ids,
        traj_ids,
        step_rewards,
        episode_returns,
        anchor_ids,
        gae_values,
        adv.float(),
        None if returns is None else returns.float(),
        weights,
        no_signal,
    )


def join_batches(on: TurnBatch, off: TurnBatch, scale: float) -> TurnBatch:
    """``on`` followed by ``off`` (its loss weights times ``scale``, its ids shifted past ``on``'s)."""
    n = len(on.turns)
    shift_task = int(on.task_ids.max()) + 1 if n else 0
    shift_traj = int(on.traj_ids.max()) + 1 if n else 0

    def cat(a, b):
        return None if a is None or b is None else torch.cat([a, b])

    return TurnBatch(
        on.turns + off.turns,
        torch.cat([on.task_ids, off.task_ids + shift_task]),
        torch.cat([on.traj_ids, off.traj_ids + shift_traj]),
        torch.cat([on.step_rewards, off.step_rewards]),
        torch.cat([on.episode_returns, off.episode_returns]),
        torch.cat([on.anchor_ids, off.anchor_ids + (int(on.anchor_ids.max()) + 1 if n else 0)]),
        cat(on.values, off.values),
        torch.cat([on.adv, off.adv]),
        cat(on.returns, off.returns),
        torch.cat([on.weights, scale * off.weights]),
        on.no_signal_group_ids | {g + shift_task for g in off.no_signal_group_ids},
        {**on.proximal, **{i + n: v for i, v in off.proximal.items()}},
        {**on.is_weights, **{i + n: v for i, v in off.is_weights.items()}},
    )


def _pad(rows: list[list[float]], width: int) -> torch.Tensor:
    out = torch.zeros(len(rows), width)
    for i, r in enumerate(rows):
        out[i, : min(len(r), width)] = torch.tensor(r[:width])
    return out


class NonFiniteError(FloatingPointError):
    """The loss, the gradient norm or the parameters of an update became nan or inf."""


def _non_finite(name: str, iteration: int, quantity: str, value, where: str) -> NonFiniteError:
    return NonFiniteError(
        f"iteration {iteration + 1}: the {name} update's {quantity} {'are' if quantity == 'parameters' else 'is'} "
        f"not finite ({value}) at {where}; "
        "training stopped (no checkpoint is written from here: the last one on disk is kept). Lower "
        "lr, raise kl_coef or check the rewards"
    )


def ppo_update(
    policy,
    optimizer,
    params,
    batch: TurnBatch,
    cfg,
    iteration: int,
    autocast,
    dist=None,
    *,
    cache_reference=False,
    name="policy",
) -> dict:
    """PPO-clip epochs over the batch's turns; one optimizer step per ``cfg.minibatch_turns`` turns.

    Per turn: ``loss = ppo_clip + kl_coef * KL(pi || ref) - entropy_coef * H (+ value_coef * 0.5 (V - G)^2)``,
    weighted by ``batch.weights``; a minibatch's loss estimates the whole batch's (weights times
    turns / minibatch turns). With ``dist`` (:class:`rspo.core.distributed.Dist`, several processes)
    gradients are averaged across processes before each step, and every process takes as many steps
    as the one with the most turns (zero gradients where it has none), so the weights stay equal.
    ``cache_reference``: keep each turn's reference log-probs on the turn (``Turn.ref_logprobs``) and
    reuse them - valid when every turn of the run is scored against one frozen reference (the trainer:
    RSPO's learner replays the explorer's turns, which the explorer's update already scored).

    Raises :class:`NonFiniteError` - naming ``iteration + 1`` (the metrics row's number), ``name``
    and the quantity - when a minibatch's loss or gradient norm is nan/inf (before the optimizer
    step, so the weights stay as they were) or when a parameter is nan/inf after the update.
    """
    distributed = dist is not None and dist.active
    index = [i for i in range(len(batch.turns)) if batch.weights[i] > 0]
    stats = {
        k: 0.0
        for k in (
            "loss/policy",
            "loss/kl",
            "loss/entropy",
            "loss/clipfrac",
            "loss/approx_kl",
            "loss/value",
            "loss/grad_norm",
            "loss/ratio_max",
        )
    }
    stats["loss/turns"] = len(index)  # turns the update trains on (loss weight > 0), replayed ones included
    if not index and not distributed:
        stats["loss/steps"] = 0
        return stats
    mb = cfg.micro_batch
    ref: dict[int, list[float]] = {}
    if cfg.kl_coef > 0:
        todo = [i for i in index if not (cache_reference and batch.turns[i].ref_logprobs is not None)]
        ref_logps, _ = score_turns(policy, [batch.turns[i] for i in todo], cfg, autocast, reference=True)
        ref = dict(zip(todo, ref_logps, strict=True))
        for i in index:
            if cache_reference:  # the reference is frozen: a replayed turn is scored once
                if i in ref:
                    batch.turns[i].ref_logprobs = ref[i]
                ref[i] = batch.turns[i].ref_logprobs
    ppo = cfg.critic
    rng = random.Random(f"{cfg.seed}:update:{iteration}")
    steps, total_w = 0, 0.0

    def clip_and_step(bad_loss, where: str) -> float:
        """End a minibatch, the same collectives on every process: stop if any process's loss was not
        finite, average and clip the gradients, stop if their norm is not finite, step; the norm."""
        if dist.max_int(int(bad_loss is not None)) if distributed else bad_loss is not None:
            shown = "on another process" if bad_loss is None else bad_loss
            raise _non_finite(name, iteration, "loss", shown, where)  # every process stops
        if distributed:
            dist.average_grads(params)
        grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
        if not bool(torch.isfinite(grad_norm)):
            raise _non_finite(name, iteration, "gradient norm", float(grad_norm), where)
        optimizer.step()
        return float(grad_norm)

    policy.train()
    for epoch in range(cfg.ppo_epochs):
        order = index[:]
        rng.shuffle(order)
        n_minibatches = -(-len(order) // cfg.minibatch_turns)
        if distributed:
            n_minibatches = dist.max_int(n_minibatches)
        for s in range(0, n_minibatches * cfg.minibatch_turns, cfg.minibatch_turns):
            minibatch = order[s : s + cfg.minibatch_turns]
            where = f"epoch {epoch + 1}, minibatch {s // cfg.minibatch_turns + 1}"
            if not minibatch:  # distributed: this process has no turns left; it still steps with the others
                optimizer.zero_grad(set_to_none=True)
                clip_and_step(None, where)
                steps += 1
                continue
            scale = len(order) / len(minibatch)  # the minibatch loss estimates the whole batch's
            wsum = float(batch.weights[minibatch].sum())
            bad_loss = None  # the first non-finite micro-batch loss
            optimizer.zero_grad(set_to_none=True)
            for m in range(0, len(minibatch), mb):
                micro = minibatch[m : m + mb]
                with autocast():
                    out = policy.logprobs(batch.inputs(micro), values=ppo, temperature=cfg.temperature)
                logp, mask = out.logp.float(), out.mask
                width = logp.shape[1]
                old = _pad([batch.proximal.get(i, batch.turns[i].token_logprobs) for i in micro], width)
                token_w = None
                if any(i in batch.is_weights for i in micro):
                    token_w = _pad([batch.is_weights.get(i, [1.0] * width) for i in micro], width)
                adv = batch.adv[micro]
                w = batch.weights[micro]
                pl, clipfrac = ppo_clip_loss(logp, old, adv, mask, cfg.clip_eps, token_w)
                loss_turn = pl
                if cfg.kl_coef > 0:
                    kl = kl_k3(logp, _pad([ref[i] for i in micro], width), mask)
                    loss_turn = loss_turn + cfg.kl_coef * kl
                    stats["loss/kl"] += float((w * kl).sum().detach())
                if cfg.entropy_coef > 0:
                    loss_turn = loss_turn - cfg.entropy_coef * out.entropy.float()
                if ppo:
                    v_loss = 0.5 * (out.values.float() - batch.returns[micro]) ** 2
                    loss_turn = loss_turn + cfg.value_coef * v_loss
                    stats["loss/value"] += float((w * v_loss).sum().detach())
                loss = scale * (w * loss_turn).sum()
                if bad_loss is None and not bool(torch.isfinite(loss.detach())):
                    bad_loss = float(loss.detach())
                loss.backward()
                with torch.no_grad():
                    log_ratio = (logp - old) * mask
                    stats["loss/policy"] += float((w * pl).sum())
                    stats["loss/entropy"] += float((w * out.entropy.float()).sum())
                    stats["loss/clipfrac"] += float((w * clipfrac).sum())
                    stats["loss/approx_kl"] += float((w * (0.5 * log_ratio**2).sum(-1)).sum())
                    stats["loss/ratio_max"] = max(stats["loss/ratio_max"], float(torch.exp(log_ratio).max()))
            total_w += wsum
            stats["loss/grad_norm"] += clip_and_step(bad_loss, where)
            steps += 1
    policy.eval()
    finite: dict[torch.device, list[torch.Tensor]] = {}
    for p in params:
        finite.setdefault(p.device, []).append(torch.isfinite(p).all())
    if not all(bool(torch.stack(flags).all()) for flags in finite.values()):  # one sync per device
        raise _non_finite(name, iteration, "parameters", "nan/inf", "the end of the update")
    for k in ("loss/policy", "loss/kl", "loss/entropy", "loss/clipfrac", "loss/approx_kl", "loss/value"):
        stats[k] /= max(total_w, 1e-12)
    stats["loss/grad_norm"] /= max(steps, 1)
    stats["loss/steps"] = steps
    return stats
