"""rspo.core.checkpoint: weights-only checkpoints - a planted pickle never runs, old formats are refused,
saving refuses what a weights-only load could not read (issue 20, docs/reliability.md).

The run-folder checks before a resume (check_run_dir) are tested through `rspo train` in
tests/test_cli_errors.py; the last good checkpoint kept when a run stops, in tests/test_reliability.py."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch
from test_trainer import small

from rspo.core.checkpoint import check_plain, read_checkpoint
from rspo.core.policies.tiny import untrained_tiny_policy
from rspo.core.rollout import Episode, Turn
from rspo.core.trainer import Trainer

pytestmark = pytest.mark.usefixtures("one_thread")


def _state_path(cfg) -> Path:
    return cfg.run_dir / "checkpoint" / "state.pt"


class Plant:
    """A pickle that runs code when loaded: it writes ``marker``."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('pwned')",))


def _turn(action="go") -> Turn:
    return Turn("p", ["go", "look"], action, 0, [5, 6], [-0.5, -0.25], "a", 1.0, 0.0, True, None, [-0.4])


@pytest.mark.slow
def test_an_rspo_checkpoint_loads_with_weights_only_and_restores_the_buffer(tmp_path):
    from rspo.core.swap import ReplayBuffer

    cfg = small(tmp_path, name="r", algo="grpo", reward="rspo", iterations=1)
    trainer = Trainer(cfg, policy=untrained_tiny_policy(0))
    trainer.run()
    state = torch.load(_state_path(cfg), weights_only=True)  # raises on any non-allowed object
    assert state["format"] == 2 and state["iteration"] == 1
    buffer = state["extra"]["buffer"]
    assert buffer and isinstance(buffer[0]["episodes"][0], dict)
    restored = ReplayBuffer.from_state(buffer, cfg.buffer_groups, cfg.buffer_max_age)
    assert [g.episodes for g in restored.groups] == [g.episodes for g in trainer.explorer.buffer.groups]
    assert isinstance(restored.groups[0].episodes[0].turns[0], Turn)
    for name, p in trainer.explorer.policy.named_trainable_parameters():
        assert torch.equal(state["extra"]["explorer"][name], p.detach().cpu())


@pytest.mark.parametrize("how", ["pickle.dump", "torch.save inside a state dict"])
def test_a_planted_pickle_does_not_run_on_resume(tmp_path, how):
    cfg = small(tmp_path, name="shared", iterations=2)
    marker = tmp_path / "marker.txt"
    path = _state_path(cfg)
    path.parent.mkdir(parents=True)
    cfg.save(cfg.run_dir / "config.json")
    if how == "pickle.dump":
        path.write_bytes(pickle.dumps(Plant(marker)))
    else:
        torch.save({"format": 2, "iteration": 1, "policy": {}, "extra": {"x": Plant(marker)}}, path)
    resumed = small(tmp_path, name="shared", iterations=2, resume=True)
    with pytest.raises(ValueError, match=r"state\.pt: refusing to load this checkpoint") as err:
        Trainer(resumed, policy=untrained_tiny_policy(0)).run()
    assert "\n" not in str(err.value) and "builtins.exec" in str(err.value)
    assert not marker.exists()
    assert not (cfg.run_dir / ".lock").exists()  # the failed run released its lock
    # the plant is real: loading it the old way (a plain unpickler) runs its code
    if how == "pickle.dump":
        pickle.loads(path.read_bytes())
    else:
        torch.load(path, weights_only=False)
    assert marker.read_text() == "pwned"


def test_an_old_format_checkpoint_is_refused_as_old_and_unsafe(tmp_path):
    old = tmp_path / "old.pt"
    episode = Episode("household", "t0", 0, 0, [_turn()])
    torch.save({"format": 1, "extra": {"buffer": [{"iteration": 0, "episodes": [episode]}]}}, old)
    with pytest.raises(
        ValueError, match=r"rspo\.core\.records\.Episode.*old \(format 1\) checkpoint.*unsafe"
    ):
        read_checkpoint(old)
    torch.save({"format": 1, "iteration": 3, "policy": {}}, old)  # format 1 without objects
    with pytest.raises(ValueError, match="format 1 is not 2: an old format, unsafe to load"):
        read_checkpoint(old)
    torch.save({"format": 2, "iteration": 3, "policy": {"w": torch.ones(3)}}, old)
    old.write_bytes(old.read_bytes()[:100])  # cut
    with pytest.raises(ValueError, match="cannot read the checkpoint"):
        read_checkpoint(old)


def test_saving_refuses_objects_a_weights_only_load_could_not_read():
    check_plain({"a": [1, 2.5, "x", None, True, (1, 2)], "t": torch.zeros(2)})
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.ones(2))])
    optimizer.state_dict()  # plain: checked below
    check_plain(optimizer.state_dict())
    with pytest.raises(TypeError, match=r"state\['extra'\]\[0\] is a Episode"):
        check_plain({"extra": [Episode("household", "t", 0, 0)]})


def _state(trainer, **kw):
    from rspo.core.checkpoint import trainable_state

    state = {
        "format": 2,
        "iteration": 2,
        "env_steps": 40,
        "policy": trainable_state(trainer.policy),
        "optimizer": trainer.optimizer.state_dict(),
        "extra": {"successes": ["t a"], "explorer_successes": []},
    }
    state.update(kw)
    return state


def test_load_state_restores_the_iteration_the_steps_and_the_successes(tmp_path):
    """What a resume continues from (rspo.core.checkpoint.load_state): the iteration, the environment
    steps counted so far (each process its own, when the checkpoint holds one count per process), and
    the successes found."""
    from types import SimpleNamespace

    from rspo.core.checkpoint import load_state

    trainer = Trainer(small(tmp_path), policy=untrained_tiny_policy(0))
    load_state(trainer, _state(trainer), tmp_path / "state.pt")
    assert (trainer.iteration, trainer.env_steps, trainer.successes) == (2, 40, {"t a"})
    by_rank = _state(trainer, extra={"env_steps_by_rank": [40, 37]})
    trainer.dist = SimpleNamespace(world=2, rank=1)
    load_state(trainer, by_rank, tmp_path / "state.pt")
    assert trainer.env_steps == 37 and trainer.successes == set()
    trainer.dist = SimpleNamespace(world=3, rank=1)  # another number of processes: the total stands
    load_state(trainer, by_rank, tmp_path / "state.pt")
    assert trainer.env_steps == 40
    bare = _state(trainer)
    del bare["extra"]  # a checkpoint without extra (not required): no successes, the saved steps
    load_state(trainer, bare, tmp_path / "state.pt")
    assert trainer.env_steps == 40 and trainer.successes == set()
    bad = _state(trainer, policy={k: torch.zeros(1) for k in _state(trainer)["policy"]})
    with pytest.raises(ValueError, match="state.pt"):  # a mismatch names the file
        load_state(trainer, bad, tmp_path / "state.pt")


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({}, None),
        ({"iteration": 3}, None),  # at the run's last iteration: nothing left to train, still loadable
        ({"iteration": 4}, "past iterations=3"),
        ({"env_steps": 0}, None),
        ({"env_steps": -1}, "env_steps -1 is not a count"),
        ({"env_steps": "12"}, "env_steps '12' is not a count"),
        ({"iteration": 0}, "iteration 0 is not a whole number"),
    ],
)
def test_check_state_at_its_edges(tmp_path, change, error):
    from rspo.core.checkpoint import check_state

    trainer = Trainer(small(tmp_path, iterations=3), policy=untrained_tiny_policy(0))
    state = _state(trainer, **change)
    if error is None:
        check_state(state, tmp_path / "state.pt", trainer.cfg)
        return
    with pytest.raises(ValueError, match=error) as e:
        check_state(state, tmp_path / "state.pt", trainer.cfg)
    assert str(e.value).startswith(str(tmp_path / "state.pt"))
    if "past" not in error:
        assert str(e.value).endswith(
            "start the run again without --resume (in another folder, or after deleting this one)"
        )
