"""From episodes to a flat turn batch (rewards -> advantages -> weights), and the PPO-clip update.

:func:`build_batch` flattens episodes into the per-turn tensors of :mod:`rspo.advantages` and runs
the config's estimator; :func:`ppo_update` is the token-level PPO-clip loss with KL to the reference
(+ value loss for PPO), aggregated by :func:`rspo.losses.turn_weights`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import torch

from rspo.advantages import compute_advantages
from rspo.losses import kl_k3, ppo_clip_loss, turn_weights
from rspo.policies.base import TurnInput
from rspo.rollout import Episode, Turn


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
    weights            (N,)    loss weights, summing to 1 over the turns trained on
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

    @property
    def no_signal_groups(self) -> int:
        return len(self.no_signal_group_ids)

    def inputs(self, index) -> list[TurnInput]:
        return [
            TurnInput(
                self.turns[i].prompt, self.turns[i].candidates, self.turns[i].choice, self.turns[i].action_ids
            )
            for i in index
        ]

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


def build_batch(episodes: list[Episode], rewards: list[list[float]], cfg) -> TurnBatch:
    """Flatten ``episodes`` with their per-turn ``rewards``; run ``cfg.estimator``; set loss weights."""
    turns = [t for ep in episodes for t in ep.turns]
    task_ids = torch.tensor([ep.group for ep in episodes for _ in ep.turns], dtype=torch.long)
    traj_ids = torch.tensor([i for i, ep in enumerate(episodes) for _ in ep.turns], dtype=torch.long)
    step_rewards = torch.tensor([r for rs in rewards for r in rs], dtype=torch.float32)
    episode_returns = torch.tensor([sum(rs) for rs in rewards for _ in rs], dtype=torch.float32)
    anchors: dict[str, int] = {}
    anchor_ids = torch.tensor([anchors.setdefault(t.anchor, len(anchors)) for t in turns], dtype=torch.long)
    values = None
    if cfg.estimator == "gae":
        values = torch.tensor([t.value if t.value is not None else 0.0 for t in turns], dtype=torch.float32)
    fields = dict(
        task_ids=task_ids,
        traj_ids=traj_ids,
        step_rewards=step_rewards,
        episode_returns=episode_returns,
        anchor_ids=anchor_ids,
        values=values,
    )
    options = {
        "grpo": dict(normalize=cfg.adv_norm, episode_stats=cfg.episode_stats),
        "gigpo": dict(
            gamma=cfg.gamma, omega=cfg.omega, normalize=cfg.adv_norm, episode_stats=cfg.episode_stats
        ),
        "turn_level": dict(gamma=cfg.gamma, normalize=cfg.adv_norm),
        "rloo": {},
        "gae": dict(gamma=cfg.gae_gamma, lam=cfg.gae_lambda),
    }[cfg.estimator]
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
        values,
        adv.float(),
        None if returns is None else returns.float(),
        weights,
        no_signal,
    )


def _pad(rows: list[list[float]], width: int) -> torch.Tensor:
    out = torch.zeros(len(rows), width)
    for i, r in enumerate(rows):
        out[i, : min(len(r), width)] = torch.tensor(r[:width])
    return out


def ppo_update(policy, optimizer, params, batch: TurnBatch, cfg, iteration: int, autocast) -> dict:
    """PPO-clip epochs over the batch's turns; one optimizer step per ``cfg.minibatch_turns`` turns.

    Per turn: ``loss = ppo_clip + kl_coef * KL(pi || ref) - entropy_coef * H (+ value_coef * 0.5 (V - G)^2)``,
    weighted by ``batch.weights`` (each minibatch's loss is its weighted mean).
    """
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
    if not index:
        stats["loss/steps"] = 0
        return stats
    mb = cfg.micro_batch
    ref: dict[int, list[float]] = {}
    if cfg.kl_coef > 0:
        for s in range(0, len(index), mb):
            chunk = index[s : s + mb]
            with torch.no_grad(), autocast():
                out = policy.evaluate(batch.inputs(chunk), reference=True, temperature=cfg.temperature)
            for j, i in enumerate(chunk):
                ref[i] = out.logp[j][out.mask[j]].float().tolist()
    ppo = cfg.estimator == "gae"
    rng = random.Random(f"{cfg.seed}:update:{iteration}")
    steps, total_w = 0, 0.0
    policy.train()
    for _ in range(cfg.ppo_epochs):
        order = index[:]
        rng.shuffle(order)
        for s in range(0, len(order), cfg.minibatch_turns):
            minibatch = order[s : s + cfg.minibatch_turns]
            wsum = float(batch.weights[minibatch].sum())
            optimizer.zero_grad(set_to_none=True)
            for m in range(0, len(minibatch), mb):
                micro = minibatch[m : m + mb]
                with autocast():
                    out = policy.evaluate(batch.inputs(micro), values=ppo, temperature=cfg.temperature)
                logp, mask = out.logp.float(), out.mask
                width = logp.shape[1]
                old = _pad([batch.turns[i].token_logprobs for i in micro], width)
                adv = batch.adv[micro]
                w = batch.weights[micro] / wsum
                pl, clipfrac = ppo_clip_loss(logp, old, adv, mask, cfg.clip_eps)
                loss_turn = pl
                if cfg.kl_coef > 0:
                    kl = kl_k3(logp, _pad([ref[i] for i in micro], width), mask)
                    loss_turn = loss_turn + cfg.kl_coef * kl
                    stats["loss/kl"] += float((w * kl).sum().detach()) * wsum
                if cfg.entropy_coef > 0:
                    loss_turn = loss_turn - cfg.entropy_coef * out.entropy.float()
                if ppo:
                    v_loss = 0.5 * (out.values.float() - batch.returns[micro]) ** 2
                    loss_turn = loss_turn + cfg.value_coef * v_loss
                    stats["loss/value"] += float((w * v_loss).sum().detach()) * wsum
                loss = (w * loss_turn).sum()
                loss.backward()
                with torch.no_grad():
                    log_ratio = (logp - old) * mask
                    stats["loss/policy"] += float((w * pl).sum()) * wsum
                    stats["loss/entropy"] += float((w * out.entropy.float()).sum()) * wsum
                    stats["loss/clipfrac"] += float((w * clipfrac).sum()) * wsum
                    stats["loss/approx_kl"] += float((w * (0.5 * log_ratio**2).sum(-1)).sum()) * wsum
                    stats["loss/ratio_max"] = max(stats["loss/ratio_max"], float(torch.exp(log_ratio).max()))
            total_w += wsum
            grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
            stats["loss/grad_norm"] += float(grad_norm)
            optimizer.step()
            steps += 1
    policy.eval()
    for k in ("loss/policy", "loss/kl", "loss/entropy", "loss/clipfrac", "loss/approx_kl", "loss/value"):
        stats[k] /= max(total_w, 1e-12)
    stats["loss/grad_norm"] /= max(steps, 1)
    stats["loss/steps"] = steps
    return stats
