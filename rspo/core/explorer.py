"""RSPO's explorer, beside the learner (docs/design.md §7): a second policy on the dense reward whose
episodes reach the learner relabelled with the outcome reward.

- :class:`Explorer`: the explorer's policy (a twin of the learner's: one base model, own trainable
  weights), its optimizer, the replay buffer and the successes it has found; one iteration of it is
  :meth:`Explorer.explore` (its rollout), the variant's hand-over, then :meth:`Explorer.train` (its
  dense-reward update). The trainer builds one when the run's swap variant has a hand-over
  (:data:`rspo.core.registry.SWAP_VARIANTS`) and calls the three in :meth:`rspo.core.trainer.Trainer.swap_step`.
- the hand-overs, one function per variant with an explorer, ``(trainer, iteration, episodes, batch,
  explored) -> (the learner's batch, metrics)``: :func:`replay` (``offpolicy``: relabelled groups
  through the buffer, an off-policy term) and :func:`mix` (``mixed``: relabelled episodes join the
  learner's groups).

The order of the work (explorer rollout, hand-over, explorer update) and the random streams it draws
are those of every committed RSPO run: ``rspo replay`` checks that they stay so.
"""

from __future__ import annotations

import random
import time
from dataclasses import replace
from functools import partial

import torch

from rspo.core.metrics import episode_metrics
from rspo.core.registry import SWAP_REWARDS, SWAP_VARIANTS
from rspo.core.rollout import Episode
from rspo.core.streams import STREAM_EXPLORER, STREAM_REPLAY, derive
from rspo.core.swap import ReplayBuffer, has_signal, swap_batch
from rspo.core.update import TurnBatch, join_batches, ppo_update


def success_keys(episodes: list[Episode]) -> set[str]:
    """One key per successful episode: its task and its action sequence."""
    return {ep.task_id + "\x1f" + "\x1e".join(t.action for t in ep.turns) for ep in episodes if ep.won}


class Explorer:
    """The explorer of an RSPO run whose learner is ``learner`` (a policy), configured by ``cfg``."""

    def __init__(self, learner, cfg):
        self.cfg = cfg
        self.variant = SWAP_VARIANTS.entry(cfg.swap_variant)
        self.policy = learner.twin("explorer")
        self.params = list(self.policy.trainable_parameters())
        self.optimizer = torch.optim.AdamW(self.params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.buffer = ReplayBuffer(cfg.buffer_groups, cfg.buffer_max_age)
        self.successes: set[str] = set()  # distinct successful trajectories (task, actions) it found

    def explore(self, trainer, it: int) -> tuple[list[Episode], dict]:
        """The explorer's rollout of iteration ``it`` (its own sampling stream; the learner's tasks, or
        with ``swap_budget="matched"`` the iteration's other half), counted in the run's environment
        steps; the episodes and their ``explorer/*`` metrics."""
        t0 = time.perf_counter()
        explored = trainer.rollout(it, policy=self.policy, stream=STREAM_EXPLORER)
        for ep in explored:
            ep.source = "explorer"
        self.successes |= success_keys(explored)
        trainer.env_steps += sum(len(ep) for ep in explored)
        seen = episode_metrics(explored)
        return explored, {
            "explorer/distinct_successes": len(self.successes),
            "explorer/success": sum(ep.won for ep in explored) / len(explored),
            "explorer/score": sum(ep.score for ep in explored) / len(explored),
            # the environment's process reward the explorer collects: where it farms a misaligned one
            "explorer/process_return": seen["rollout/process_return"],
            "explorer/episode_len": seen["rollout/episode_len"],
            "time/explorer_rollout": time.perf_counter() - t0,
        }

    def hand_over(self, trainer, it: int, episodes, batch: TurnBatch, explored) -> tuple[TurnBatch, dict]:
        """The learner's batch with the explorer's episodes in it, as the run's variant does it."""
        return self.variant.function(trainer, it, episodes, batch, explored)

    def train(self, trainer, it: int, explored: list[Episode]) -> dict:
        """The explorer's update on its own episodes under the dense reward; its metrics."""
        explorer_batch = trainer.batch(explored, SWAP_REWARDS[1])
        t0 = time.perf_counter()
        stats = ppo_update(
            self.policy,
            self.optimizer,
            self.params,
            explorer_batch,
            self.cfg,
            it,
            trainer.autocast,
            trainer.dist,
            cache_reference=True,
            name="explorer",
        )
        return {
            "explorer/return": explorer_batch.metrics()["reward/return"],
            "explorer/loss_policy": stats["loss/policy"],
            "explorer/kl": stats["loss/kl"],
            "time/explorer_update": time.perf_counter() - t0,
        }

    # --- checkpoints: the keys every committed RSPO checkpoint holds --------------------------------
    def state(self) -> dict:
        from rspo.core.checkpoint import trainable_state

        return {
            "explorer_successes": sorted(self.successes),
            "explorer": trainable_state(self.policy),
            "explorer_optimizer": self.optimizer.state_dict(),
            "buffer": self.buffer.state(),
        }

    def load_state(self, extra: dict) -> None:
        from rspo.core.checkpoint import load_trainable_state

        self.successes = set(extra.get("explorer_successes", []))
        if "explorer" not in extra:
            raise ValueError("this checkpoint has no explorer state: it was not saved by an RSPO run")
        load_trainable_state(self.policy, extra["explorer"], "checkpoint (explorer)")
        self.optimizer.load_state_dict(extra["explorer_optimizer"])
        self.buffer = ReplayBuffer.from_state(
            extra["buffer"], self.cfg.buffer_groups, self.cfg.buffer_max_age
        )


# --- the hand-overs (registry.SWAP_VARIANTS) -------------------------------------------------------
def replay(trainer, it: int, episodes, batch: TurnBatch, explored) -> tuple[TurnBatch, dict]:
    """``offpolicy``: the explorer's groups go into the replay buffer; ``replay_groups`` of the buffer's
    (relabelled with the outcome reward, their turns weighted by truncated importance weights) join
    the learner's batch as an off-policy term of weight ``swap_lambda``."""
    cfg, buffer = trainer.cfg, trainer.explorer.buffer
    buffer.add(explored, it)
    buffer.evict(it)
    rng = random.Random(derive(cfg.seed, STREAM_REPLAY, it))
    eligible = partial(has_signal, cfg=cfg, spec=trainer.spec) if cfg.replay_select == "signal" else None
    groups = buffer.sample(cfg.replay_groups, rng, eligible)
    replayed = [replace(ep, group=k) for k, g in enumerate(groups) for ep in g.episodes]
    off, stats = swap_batch(trainer.policy, replayed, cfg, trainer.spec, trainer.autocast)
    ages = buffer.ages(it)
    return join_batches(batch, off, cfg.swap_lambda), {
        "buffer/groups": len(buffer),
        "buffer/episodes": buffer.episodes,
        "buffer/age_mean": sum(ages) / max(len(ages), 1),
        "buffer/age_max": max(ages, default=0),
        "buffer/replayed_groups": len(groups),
        **stats,
    }


def mix(trainer, it: int, episodes, batch: TurnBatch, explored) -> tuple[TurnBatch, dict]:
    """``mixed``: the explorer's episodes, relabelled with the outcome reward, join the learner's
    groups of the same tasks (one batch, advantages over both; explorer turns weighted by
    ``swap_lambda``)."""
    cfg = trainer.cfg
    return swap_batch(
        trainer.policy, episodes + explored, cfg, trainer.spec, trainer.autocast, cfg.swap_lambda
    )
