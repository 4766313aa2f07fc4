"""The reward swap (RSPO, docs/design.md §7): relabel, replay buffer, truncated importance weights.

What the paper tells (arXiv 2607.04713, abstract and figure 1): dense process rewards let sampled
trajectories leave the behaviour space that outcome-trained policies stay in, and a *reward swap*
keeps the optimisation objective consistent with the outcome reward. The equations are not public;
the kit implements this reconstruction, and says so wherever it reports RSPO:

1. an *explorer* policy pi_B is trained on the dense reward (process + outcome);
2. its episodes are **relabelled with the outcome reward** (the swap) and kept, with their behaviour
   log-probs, in a bounded replay buffer (:class:`ReplayBuffer`);
3. the *learner* pi_A - the evaluated policy - is trained on its own rollouts with the outcome
   reward, plus an off-policy PPO-clip term on buffer episodes whose advantages come from the
   outcome reward by the same estimator, weighted by the truncated importance weight
   ``w = min(pi_A_old / pi_B, c)`` (:func:`importance_weights`) and by ``lambda``.

The off-policy term is the decoupled PPO objective (Hilton et al. 2021, arXiv 2110.00641): the
proximal policy is the learner at the start of the update (ratio ``pi_A / pi_A_old`` clipped as in
PPO), and the behaviour correction ``pi_A_old / pi_B`` is a separate, truncated, gradient-free
weight - so the clip range means the same on- and off-policy, and a stale explorer episode cannot
blow up the update. The functions here are pure: episodes, tensors and numbers in and out.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from rspo.core.rewards import RewardSpec, compute_rewards
from rspo.core.rollout import Episode, Turn


def relabel(episodes: Sequence[Episode], spec: RewardSpec | None = None) -> list[list[float]]:
    """The swap: per-turn rewards of (explorer) ``episodes`` under the *outcome* reward.

    The explorer was trained on process + outcome; what the learner optimises from its episodes is
    only what the outcome reward says of them (the invalid-action penalty included).
    """
    return compute_rewards("outcome", episodes, spec or RewardSpec())


@dataclass
class BufferGroup:
    """One task group of explorer episodes (G copies of one task), kept whole for group advantages."""

    episodes: list[Episode]
    iteration: int  # the iteration that collected it

    def age(self, now: int) -> int:
        return now - self.iteration


class ReplayBuffer:
    """A bounded FIFO of explorer task groups (``capacity`` groups, dropping groups older than ``max_age``).

    Groups, not single episodes, are the unit: the learner's estimator normalises advantages within
    a task group, so an explorer episode is always replayed with the group it was collected in.
    """

    def __init__(self, capacity: int = 32, max_age: int = 4):
        if capacity < 1 or max_age < 0:
            raise ValueError(f"ReplayBuffer needs capacity >= 1 and max_age >= 0, got {capacity}, {max_age}")
        self.capacity, self.max_age = capacity, max_age
        self.groups: deque[BufferGroup] = deque(maxlen=capacity)

    def __len__(self) -> int:
        return len(self.groups)

    @property
    def episodes(self) -> int:
        return sum(len(g.episodes) for g in self.groups)

    def add(self, episodes: Sequence[Episode], iteration: int) -> None:
        """Store ``episodes`` (grouped by ``Episode.group``) as collected at ``iteration``."""
        by_group: dict[int, list[Episode]] = {}
        for ep in episodes:
            by_group.setdefault(ep.group, []).append(ep)
        for eps in by_group.values():
            self.groups.append(BufferGroup([copy.copy(ep) for ep in eps], iteration))

    def evict(self, now: int) -> int:
        """Drop groups older than ``max_age`` iterations; return how many were dropped."""
        before = len(self.groups)
        self.groups = deque((g for g in self.groups if g.age(now) <= self.max_age), maxlen=self.capacity)
        return before - len(self.groups)

    def sample(self, n_groups: int, rng: random.Random, eligible=None) -> list[BufferGroup]:
        """``n_groups`` distinct groups drawn uniformly (all of them if fewer are stored); with
        ``eligible`` (a predicate on a :class:`BufferGroup`) only from the groups it accepts."""
        groups = [g for g in self.groups if eligible is None or eligible(g)]
        return groups if n_groups >= len(groups) else rng.sample(groups, n_groups)

    def ages(self, now: int) -> list[int]:
        return [g.age(now) for g in self.groups]

    def state(self) -> list[dict]:
        """Plain data for a checkpoint - dicts, lists, strings and numbers, no Python objects, so
        ``torch.load(weights_only=True)`` reads it (:meth:`from_state` restores it)."""
        return [
            {"iteration": g.iteration, "episodes": [dataclasses.asdict(ep) for ep in g.episodes]}
            for g in self.groups
        ]

    @classmethod
    def from_state(cls, state: list[dict], capacity: int, max_age: int) -> ReplayBuffer:
        buf = cls(capacity, max_age)
        for g in state:
            episodes = [Episode(**{**ep, "turns": [_turn(t) for t in ep["turns"]]}) for ep in g["episodes"]]
            buf.groups.append(BufferGroup(episodes, g["iteration"]))
        return buf


def _turn(fields: dict) -> Turn:
    """A Turn from its checkpointed fields (a checkpoint written before ``Turn.reward`` was renamed
    ``outcome_reward`` still loads)."""
    if "reward" in fields:
        fields = {**{k: v for k, v in fields.items() if k != "reward"}, "outcome_reward": fields["reward"]}
    return Turn(**fields)


def has_signal(group: BufferGroup, cfg, spec: RewardSpec | None = None) -> bool:
    """Whether the learner's estimator (``cfg``) gives any of the group's turns a non-zero advantage
    once the group is relabelled with the outcome reward. A group-relative estimator (GRPO, GiGPO,
    RLOO) learns nothing from a group whose copies all fail or all succeed; replaying it only costs
    scoring. (GAE, judged with the values stored at collection: almost every group has signal.)"""
    from rspo.core.update import build_batch

    return not build_batch(group.episodes, relabel(group.episodes, spec), cfg).no_signal_group_ids


def importance_weights(
    learner_logp: torch.Tensor, behaviour_logp: torch.Tensor, mask: torch.Tensor, c: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Truncated per-token importance weights ``(N, L)`` and the truncated indicator ``(N, L)``.

    ``w = min(exp(learner_logp - behaviour_logp), c)`` on real tokens, 0 on padding; no gradient
    (the weight corrects *which* policy sampled the token; the gradient flows through the PPO ratio).
    Truncation at ``c`` bounds the variance (as in Retrace / V-trace / IMPALA's rho-bar).

    ============== ======  ==================================================
    learner_logp   (N, L)  log pi_A_old of the explorer's tokens
    behaviour_logp (N, L)  log pi_B at collection (the explorer's log-probs)
    mask           (N, L)  bool, real tokens
    c              float   truncation level (c >= 1 keeps equal policies at 1)
    ============== ======  ==================================================
    """
    if c <= 0:
        raise ValueError(f"truncation c must be > 0, got {c}")
    with torch.no_grad():
        log_rho = (learner_logp - behaviour_logp).clamp(max=50.0)
        rho = torch.exp(log_rho)
        truncated = (rho > c * (1 + 1e-6)) & mask  # float noise around an equal ratio is not truncation
        w = torch.where(mask, rho.clamp(max=c), torch.zeros_like(rho))
    return w, truncated


def swap_batch(learner, episodes: Sequence[Episode], cfg, spec: RewardSpec, autocast, scale: float = 1.0):
    """Episodes relabelled with the outcome reward as one learner batch; explorer turns off-policy.

    Advantages come from the learner's estimator on the outcome reward (GAE: the learner's critic
    values explorer states). Every turn of an episode whose ``source`` is ``"explorer"`` gets the
    proximal log-probs ``log pi_A_old`` (the learner now, before its update) and the truncated
    importance weights ``min(pi_A_old / pi_B, cfg.swap_c)``, and its loss weight times ``scale`` -
    every one the update trains on (loss weight > 0; ``no_signal="skip"`` drops the others), so the
    ``swap/*`` metrics describe the trained turns.
    Returns the :class:`rspo.core.update.TurnBatch` and ``swap/*`` metrics.
    """
    from rspo.core.update import _pad, build_batch, score_turns

    turns = [t for ep in episodes for t in ep.turns]
    sources = [ep.source for ep in episodes for _ in ep.turns]
    off = [i for i, source in enumerate(sources) if source == "explorer"]
    values, prox = None, {}
    if cfg.critic:  # the learner's critic values every explorer state (GAE needs them all)
        logps, critic = score_turns(learner, [turns[i] for i in off], cfg, autocast, values=True)
        prox = dict(zip(off, logps, strict=True))
        values = [t.value if t.value is not None else 0.0 for t in turns]
        for k, i in enumerate(off):
            values[i] = critic[k]
    batch = build_batch(list(episodes), relabel(episodes, spec), cfg, values)
    off = [i for i in off if batch.weights[i] > 0]  # the update trains on these only
    todo = [i for i in off if i not in prox]
    prox.update(zip(todo, score_turns(learner, [turns[i] for i in todo], cfg, autocast)[0], strict=True))
    proximal = [prox[i] for i in off]
    stats = {"swap/turns": len(off), "swap/is_ratio_mean": 0.0, "swap/is_ratio_max": 0.0}
    stats.update({"swap/truncated_frac": 0.0, "swap/tokens": 0, "swap/is_weight_mean": 0.0})
    trained = set(off)
    stats.update(handover_stats(episodes, [i in trained for i in range(len(turns))]))
    if not off:
        return batch, stats
    width = max(len(p) for p in proximal)
    behaviour = [turns[i].token_logprobs for i in off]
    mask = _pad([[1.0] * len(p) for p in proximal], width).bool()
    prox_t, beh_t = _pad(proximal, width), _pad(behaviour, width)
    w, truncated = importance_weights(prox_t, beh_t, mask, cfg.swap_c)
    rho = torch.exp((prox_t - beh_t).clamp(max=50.0))[mask]
    for k, i in enumerate(off):
        batch.proximal[i] = proximal[k]
        batch.is_weights[i] = w[k][mask[k]].tolist()
    batch.weights[off] *= scale
    stats.update(
        {
            "swap/is_ratio_mean": float(rho.mean()),
            "swap/is_ratio_max": float(rho.max()),
            "swap/truncated_frac": float(truncated.sum()) / max(int(mask.sum()), 1),
            "swap/tokens": int(mask.sum()),
            "swap/is_weight_mean": float(w[mask].mean()),
        }
    )
    return batch, stats


def loss_split(batch, n_on: int) -> tuple[float, float]:
    """The learner's PPO-clip loss at the start of its update, split into its own turns (the first
    ``n_on`` of ``batch``, a :func:`rspo.core.update.join_batches` result) and the replayed explorer turns.

    At the start every ratio is 1 (own turns: new = behaviour log-probs; replayed ones: new = the
    proximal log-probs), so a turn's loss is ``-A x`` its mean token weight (1 for own turns, the
    truncated importance weights for replayed ones), and the batch's is the sum over turns of its
    loss weight times that (:func:`rspo.core.losses.ppo_clip_loss`, :func:`rspo.core.update.ppo_update`)."""
    own = replayed = 0.0
    for i in range(len(batch.turns)):
        w = float(batch.weights[i])
        if w <= 0:
            continue
        token_w = batch.is_weights.get(i)
        mean_w = sum(token_w) / len(token_w) if token_w else 1.0
        term = -w * float(batch.adv[i]) * mean_w
        if i < n_on:
            own += term
        else:
            replayed += term
    return own, replayed


def handover_stats(episodes: Sequence[Episode], trained: Sequence[bool]) -> dict:
    """What the explorer handed the learner in one update: its episodes offered (``swap/episodes``),
    those that won (``swap/successes``), the share of its offered groups holding a win
    (``swap/success_group_frac``), and its winning episodes of which the update trains at least one turn
    (``swap/trained_successes``: 0 in every update of a run means the explorer handed over nothing).
    ``trained``: per turn of ``episodes`` in order, whether the update trains it."""
    explorer = [ep for ep in episodes if ep.source == "explorer"]
    groups: dict[int, bool] = {}
    for ep in explorer:
        groups[ep.group] = groups.get(ep.group, False) or bool(ep.won)
    trained_wins, k = 0, 0
    for ep in episodes:
        n = len(ep.turns)
        if ep.source == "explorer" and ep.won and any(trained[k : k + n]):
            trained_wins += 1
        k += n
    return {
        "swap/episodes": len(explorer),
        "swap/successes": sum(bool(ep.won) for ep in explorer),
        "swap/success_group_frac": sum(groups.values()) / len(groups) if groups else 0.0,
        "swap/trained_successes": trained_wins,
    }
