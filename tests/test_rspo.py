"""The reward swap in the trainer: every base algorithm, the variants, resume with a buffer, LoRA twins."""

from __future__ import annotations

import pytest
import torch
from test_trainer import _strip_time, run, small

from rspo.config import TrainConfig
from rspo.policies.tiny import untrained_tiny_policy
from rspo.trainer import Trainer

pytestmark = pytest.mark.usefixtures("one_thread")

SWAP_METRICS = {
    "explorer/success",
    "explorer/return",
    "explorer/process_return",
    "explorer/episode_len",
    "buffer/groups",
    "buffer/age_mean",
    "buffer/age_max",
    "swap/is_ratio_mean",
    "swap/is_ratio_max",
    "swap/truncated_frac",
}


def snapshot(policy):
    return {n: p.detach().clone() for n, p in policy.named_trainable_parameters()}


def changed(before, policy):
    after = dict(policy.named_trainable_parameters())
    return any(not torch.equal(before[n], after[n]) for n in before)


@pytest.mark.parametrize("algo", ["grpo", "ppo", "gigpo"])
def test_rspo_trains_learner_and_explorer_on_every_base_algo(tmp_path, algo, first_copy_succeeds):
    cfg = small(tmp_path, algo=algo, reward="rspo", iterations=3)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0, value_head=algo == "ppo"))
    learner, explorer = snapshot(trainer.policy), snapshot(trainer.explorer)
    rows = trainer.run()
    assert changed(learner, trainer.policy) and changed(explorer, trainer.explorer)
    for row in rows:
        assert SWAP_METRICS <= set(row)
        values = [v for k, v in row.items() if k.startswith(("loss/", "swap/", "explorer/"))]
        assert all(torch.isfinite(torch.tensor(float(v))) for v in values), row
        assert row["swap/is_ratio_max"] >= row["swap/is_ratio_mean"] > 0
    # both policies sample: twice the environment steps of the learner's own rollouts
    assert rows[-1]["rollout/env_steps"] > sum(r["rollout/turns"] for r in rows)
    assert rows[-1]["buffer/groups"] == min(cfg.buffer_groups, 2 * (cfg.buffer_max_age + 1))


def test_mixed_and_schedule_variants(tmp_path, first_copy_succeeds):
    mixed = small(tmp_path, name="mixed", reward="rspo", swap_variant="mixed", algo="gigpo")
    rows = run(mixed)[2]
    assert all(r["swap/turns"] > 0 and "buffer/groups" not in r for r in rows)
    sched = small(tmp_path, name="sched", reward="rspo", swap_variant="schedule", iterations=4)
    trainer = Trainer(sched, policy=untrained_tiny_policy(0))
    assert trainer.explorer is None
    rows = trainer.run()
    assert [r["reward/dense"] for r in rows] == [1.0, 1.0, 0.0, 0.0]
    assert "explorer/success" not in rows[0]


def test_rspo_resume_with_a_non_empty_buffer_ends_where_the_uninterrupted_run_ends(
    tmp_path, first_copy_succeeds
):
    def cfg(name, **kw):
        return small(tmp_path, name=name, algo="grpo", reward="rspo", iterations=3, **kw)

    full = Trainer(cfg("full"), policy=untrained_tiny_policy(0))
    rows_full = full.run()
    original = Trainer.train_step

    def killed(self, it):
        if it == 2:
            raise KeyboardInterrupt
        return original(self, it)

    Trainer.train_step = killed
    try:
        with pytest.raises(KeyboardInterrupt):
            Trainer(cfg("part"), policy=untrained_tiny_policy(0)).run()
    finally:
        Trainer.train_step = original
    state = torch.load(tmp_path / "part" / "checkpoint" / "state.pt", weights_only=True)
    assert len(state["extra"]["buffer"]) > 0 and state["extra"]["explorer"]
    resumed = Trainer(cfg("part", resume=True), policy=untrained_tiny_policy(0))
    rows_res = resumed.run()
    assert _strip_time(rows_res) == _strip_time(rows_full)
    for a, b in ((full.policy, resumed.policy), (full.explorer, resumed.explorer)):
        for (n, x), (_, y) in zip(
            a.named_trainable_parameters(), b.named_trainable_parameters(), strict=True
        ):
            assert torch.equal(x, y), n


def test_lora_explorer_and_learner_are_two_adapters_on_one_base(tmp_path, first_copy_succeeds):
    untrained_tiny_policy(0).save_pretrained(tmp_path / "tiny")
    cfg = small(tmp_path, name="lora-rspo", model=str(tmp_path / "tiny"), lora=True, reward="rspo")
    trainer = Trainer(cfg)
    assert trainer.explorer.model is trainer.policy.model  # one base model
    learner_names = [n for n, _ in trainer.policy.named_trainable_parameters()]
    explorer_names = [n for n, _ in trainer.explorer.named_trainable_parameters()]
    assert learner_names and all(".default." in n for n in learner_names)
    assert len(explorer_names) == len(learner_names) and all(".explorer." in n for n in explorer_names)
    learner, explorer = snapshot(trainer.policy), snapshot(trainer.explorer)
    trainer.run()
    assert changed(learner, trainer.policy) and changed(explorer, trainer.explorer)
    # the reference is the base with adapters off, untouched by either adapter's training
    prompt, cands = "You are an expert agent in a household. Your task is to: look.", ["look", "inventory"]
    ref = trainer.explorer.candidate_logprobs([prompt], [cands], reference=True)
    fresh = untrained_tiny_policy(0).candidate_logprobs([prompt], [cands])
    assert torch.allclose(ref[0], fresh[0], atol=1e-5)
    # the two adapters now differ, and each policy scores with its own
    a = trainer.policy.candidate_logprobs([prompt], [cands])[0]
    b = trainer.explorer.candidate_logprobs([prompt], [cands])[0]
    assert not torch.allclose(a, b) and torch.equal(
        a, trainer.policy.candidate_logprobs([prompt], [cands])[0]
    )


def test_signal_selection_skips_replay_when_no_stored_group_has_signal(tmp_path):
    """The untrained model never succeeds: no explorer group has outcome signal, so the signal
    selection replays nothing where uniform selection replays (and scores) groups that train nothing."""
    rows = {}
    for select in ("uniform", "signal"):
        cfg = small(tmp_path, name=select, reward="rspo", replay_select=select, no_signal="skip")
        rows[select] = Trainer(cfg, policy=untrained_tiny_policy(0)).run()
    assert all(r["buffer/replayed_groups"] > 0 and r["swap/turns"] == 0 for r in rows["uniform"])
    assert all(r["buffer/replayed_groups"] == 0 and r["swap/turns"] == 0 for r in rows["signal"])


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(swap_variant="both"), "swap_variant"),
        (dict(swap_c=0.0), "swap_c"),
        (dict(swap_lambda=-1.0), "swap_lambda"),
        (dict(schedule_frac=1.5), "schedule_frac"),
        (dict(buffer_groups=0), "buffer_groups"),
        (dict(replay_select="fresh"), "replay_select"),
    ],
)
def test_swap_config_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(reward="rspo", **kw)
