"""RSPO's explorer as its own piece, and the variant registry: a new variant is one function and one
entry (rspo.core.explorer, rspo.core.registry.SWAP_VARIANTS)."""

from __future__ import annotations

import pytest
from test_trainer import small

from rspo.core.config import TrainConfig
from rspo.core.explorer import Explorer
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.registry import SWAP_VARIANTS, SwapVariant
from rspo.core.trainer import Trainer


def test_the_registered_variants_say_who_needs_an_explorer_and_who_switches_rewards():
    assert list(SWAP_VARIANTS) == ["offpolicy", "mixed", "schedule"]
    assert [v.explorer for v in SWAP_VARIANTS.values()] == [True, True, False]
    cfg = TrainConfig(reward="rspo", swap_variant="schedule", iterations=10, schedule_frac=0.3)
    assert [cfg.reward_at(i) for i in (0, 2, 3, 9)] == ["dense", "dense", "outcome", "outcome"]
    assert not cfg.uses_explorer
    assert TrainConfig(reward="rspo", swap_variant="mixed").uses_explorer
    assert not TrainConfig(reward="dense", swap_variant="mixed").uses_explorer  # only under the swap
    with pytest.raises(ValueError, match="TrainConfig.swap_variant"):
        TrainConfig(reward="rspo", swap_variant="handover")


def test_a_new_variant_is_one_function_and_one_entry(tmp_path):
    calls = []

    def learner_only(trainer, it, episodes, batch, explored):
        """Hands nothing over: the learner trains on its own batch."""
        calls.append((it, len(episodes), len(explored), {ep.source for ep in explored}))
        return batch, {"swap/handed": float(len(explored))}

    with SWAP_VARIANTS.temporary(SwapVariant("learner_only", hand_over=learner_only)):
        cfg = small(tmp_path, algo="grpo", reward="rspo", swap_variant="learner_only", iterations=1)
        assert cfg.uses_explorer and cfg.name.endswith("-learner_only-s0")
        trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
        assert isinstance(trainer.explorer, Explorer)
        rows = trainer.run()
    assert [c[0] for c in calls] == [0]  # once an iteration, with the explorer's own episodes
    assert all(
        n == m == cfg.tasks_per_iter * cfg.group_size and src == {"explorer"} for _, n, m, src in calls
    )
    assert [r["swap/handed"] for r in rows] == [4.0]  # eval_every=0: no row 0
    assert all("explorer/success" in r and "explorer/loss_policy" in r for r in rows)
    assert "learner_only" not in SWAP_VARIANTS  # the registry is as it was


def test_the_explorer_rolls_out_on_its_own_stream_and_counts_its_steps(tmp_path):
    cfg = small(tmp_path, algo="grpo", reward="rspo", iterations=1, swap_budget="matched", tasks_per_iter=4)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    trainer.seed_iteration(0)
    explored, metrics = trainer.explorer.explore(trainer, 0)
    learner_tasks = set(trainer.sample_tasks(0))
    assert {ep.task_id for ep in explored}.isdisjoint(learner_tasks)  # matched: the other half
    assert trainer.env_steps == sum(len(ep) for ep in explored) > 0
    assert metrics["explorer/success"] == sum(ep.won for ep in explored) / len(explored)
    state = trainer.explorer.state()
    assert set(state) == {"explorer_successes", "explorer", "explorer_optimizer", "buffer"}
