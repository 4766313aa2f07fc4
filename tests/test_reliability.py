"""A run that stops rather than go silently wrong, and survives a SIGKILL (issue 20, docs/reliability.md).

Cross-module: the trainer (rspo.core.trainer), the update's non-finite checks (rspo.core.update.NonFiniteError),
the rewards (rspo.core.rewards), the checkpoint kept (rspo.core.checkpoint) and benchmarks/kill_test.py. The
rest of docs/reliability.md's rows are tests of one module each: tests/test_checkpoint.py (weights-only
checkpoints), tests/test_atomic.py (atomic writes, the run folder's lock), tests/test_metrics.py (the
metrics log)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
import torch
from test_trainer import small

from rspo.core.checkpoint import read_checkpoint
from rspo.core.metrics import MetricsLog
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.trainer import Trainer
from rspo.core.update import NonFiniteError

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[1]


def _state_path(cfg) -> Path:
    return cfg.run_dir / "checkpoint" / "state.pt"


# --- non-finite updates ---------------------------------------------------------------------------
def _poison_from(monkeypatch, iteration: int, poison) -> None:
    """Call ``poison(trainer)`` before the train step of 0-based ``iteration``."""
    original = Trainer.train_step

    def step(self, it):
        if it == iteration:
            poison(self)
        return original(self, it)

    monkeypatch.setattr(Trainer, "train_step", step)


def _assert_last_good_checkpoint(cfg, iteration: int, policy=None) -> dict:
    state = read_checkpoint(_state_path(cfg))
    assert state["iteration"] == iteration
    assert all(torch.isfinite(t).all() for t in state["policy"].values())
    if policy is not None:  # stopped before the optimizer step: the weights are the checkpoint's
        for name, p in policy.named_trainable_parameters():
            assert torch.equal(state["policy"][name], p.detach().cpu()), name
    return state


@pytest.mark.slow
def test_a_nan_loss_stops_training_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    import rspo.core.update

    cfg = small(tmp_path, name="nan", iterations=3)
    poisoned = {"on": False}
    real_loss = rspo.core.update.ppo_clip_loss

    def loss(*args, **kwargs):
        pl, clipfrac = real_loss(*args, **kwargs)
        return (pl * math.nan if poisoned["on"] else pl), clipfrac

    monkeypatch.setattr(rspo.core.update, "ppo_clip_loss", loss)
    _poison_from(monkeypatch, 1, lambda trainer: poisoned.update(on=True))
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    with pytest.raises(NonFiniteError, match=r"iteration 2: the policy update's loss is not finite \(nan\)"):
        trainer.run()
    _assert_last_good_checkpoint(cfg, 1, trainer.policy)
    assert [r["iteration"] for r in MetricsLog(cfg.run_dir / "metrics.jsonl").read()] == [1]
    monkeypatch.undo()  # the cause removed, the run resumes from the last good checkpoint
    rows = Trainer(
        small(tmp_path, name="nan", iterations=3, resume=True), policy=untrained_tiny_policy(0)
    ).run()
    assert [r["iteration"] for r in rows] == [1, 2, 3]


def test_a_nan_gradient_stops_before_the_optimizer_step(tmp_path, monkeypatch):
    cfg = small(tmp_path, name="grad", iterations=3)

    def poison(trainer):
        next(iter(trainer.params)).register_hook(lambda g: g * math.nan)

    _poison_from(monkeypatch, 1, poison)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    with pytest.raises(NonFiniteError, match="iteration 2: the policy update's gradient norm is not finite"):
        trainer.run()
    _assert_last_good_checkpoint(cfg, 1, trainer.policy)


def test_nan_parameters_after_a_step_stop_the_run_and_are_never_saved(tmp_path, monkeypatch):
    cfg = small(tmp_path, name="params", iterations=3)

    def poison(trainer):
        step = trainer.optimizer.step

        def bad_step(*args, **kwargs):
            out = step(*args, **kwargs)
            with torch.no_grad():
                trainer.params[0].view(-1)[0] = math.inf
            return out

        trainer.optimizer.step = bad_step

    _poison_from(monkeypatch, 1, poison)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    with pytest.raises(NonFiniteError, match="iteration 2: the policy update's parameters are not finite"):
        trainer.run()
    assert not torch.isfinite(trainer.params[0]).all()
    _assert_last_good_checkpoint(cfg, 1)
    before = _state_path(cfg).read_bytes()
    with pytest.raises(RuntimeError, match="refusing to write a checkpoint at iteration 1: policy parameter"):
        trainer.save_checkpoint()
    assert _state_path(cfg).read_bytes() == before


def test_a_huge_learning_rate_stops_with_a_clear_error(tmp_path):
    cfg = small(tmp_path, name="lr", iterations=4, lr=1e30)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    with pytest.raises(NonFiniteError, match=r"iteration \d: the policy update's .* is not finite"):
        trainer.run()
    state = read_checkpoint(_state_path(cfg))
    assert all(torch.isfinite(t).all() for t in state["policy"].values())


def test_a_nan_reward_is_a_clear_error_before_any_update(tmp_path):
    from rspo.core.registry import REWARD_MODES, RewardMode

    outcome = REWARD_MODES["outcome"].function

    def nan_reward(episodes, spec):
        rewards = outcome(episodes, spec)
        rewards[0][-1] = math.nan
        return rewards

    cfg = small(tmp_path, name="reward", iterations=2)
    with (
        REWARD_MODES.temporary(RewardMode("outcome", nan_reward)),
        pytest.raises(ValueError, match="episode_returns is not finite: nan at row 0"),
    ):
        Trainer(cfg, policy=untrained_tiny_policy(0)).run()
    assert not _state_path(cfg).exists()


# --- SIGKILL at random moments --------------------------------------------------------------------
def _kill_test_module():
    spec = importlib.util.spec_from_file_location("kill_test", ROOT / "benchmarks" / "kill_test.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_kill_tests_comparison_finds_a_duplicated_or_missing_row_and_other_weights(tmp_path):
    kt = _kill_test_module()
    state = {"format": 2, "iteration": 2, "env_steps": 8, "policy": {"w": torch.ones(2)}}
    state |= {"optimizer": {"state": {}, "param_groups": []}, "extra": {}}
    for name, iterations in (("ref", [1, 2]), ("good", [1, 2]), ("dup", [1, 1, 2]), ("miss", [2])):
        (tmp_path / name / "checkpoint").mkdir(parents=True)
        rows = "".join(
            json.dumps({"iteration": i, "loss/grad_norm": 0.5, "time/total": 9.0 * i}) + "\n"
            for i in iterations
        )
        (tmp_path / name / "metrics.jsonl").write_text(rows)
        torch.save(state, tmp_path / name / "checkpoint" / "state.pt")
    assert kt.compare(tmp_path / "ref", tmp_path / "good") == []
    assert kt.compare(tmp_path / "ref", tmp_path / "dup") == ["reference row iteration 1 found 2 times"]
    assert kt.compare(tmp_path / "ref", tmp_path / "miss") == ["reference row iteration 1 found 0 times"]
    torch.save({**state, "policy": {"w": torch.zeros(2)}}, tmp_path / "good" / "checkpoint" / "state.pt")
    (tmp_path / "good" / "checkpoint" / ".state.pt.x.partial").write_bytes(b"")
    assert kt.compare(tmp_path / "ref", tmp_path / "good") == [
        "final checkpoint differs in policy",
        "temporary files left: ['.state.pt.x.partial']",
    ]


@pytest.mark.slow
def test_sigkill_at_random_moments_and_in_writes_then_resume_ends_as_the_uninterrupted_run(tmp_path):
    kt = _kill_test_module()
    passed, done, problems = kt.kill_test(
        tmp_path, kills=4, iterations=4, checkpoint_every=1, reward="dense", eval_every=2, seed=1
    )
    assert problems == [] and passed, problems
    assert done["kills"] >= 2 and done["starts"] == done["kills"] + 1 and done["stale_locks"] == done["kills"]
