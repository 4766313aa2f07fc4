"""The TextWorld adapter on games generated offline with ``tw-make`` in a fixture.

Skipped without the extra (``pip install -e .[textworld]``).
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("textworld", reason="the textworld extra is not installed (pip install -e .[textworld])")

from rspo.core.envs import INFO_KEYS  # noqa: E402
from rspo.core.envs.baselines import expert_policy, play_tasks, random_policy  # noqa: E402
from rspo.core.envs.textworld import TextWorldEnv  # noqa: E402
from rspo.core.envs.textworld.env import clean, inventory_items  # noqa: E402


def tw_make(output: Path, seed: int) -> None:
    """One small game with TextWorld's own generator CLI (offline)."""
    exe = shutil.which("tw-make") or str(Path(sys.executable).with_name("tw-make"))
    cmd = [exe, "custom", "--world-size", "3", "--nb-objects", "6", "--quest-length", "3"]
    subprocess.run(
        cmd + ["--seed", str(seed), "--output", str(output), "-f", "--silent"], check=True, timeout=300
    )


@pytest.fixture(scope="module")
def games(tmp_path_factory):
    root = tmp_path_factory.mktemp("tw-games")
    tw_make(root / "train" / "g1.z8", 1)
    tw_make(root / "test" / "g2.z8", 2)
    return root


def _check_info(info):
    assert set(INFO_KEYS) <= set(info)
    assert isinstance(info["task"], str) and info["task"]
    assert info["admissible_actions"] and all(isinstance(a, str) for a in info["admissible_actions"])
    hash(info["anchor"])
    assert isinstance(info["won"], bool) and 0.0 <= info["progress"] <= 1.0
    assert isinstance(info["process_reward"], float) and isinstance(info["valid"], bool)


def test_splits_from_the_folder_and_one_pool(games):
    train, test = TextWorldEnv("train", games=games), TextWorldEnv("test", games=games)
    assert train.task_ids == ["train/00000"] and test.task_ids == ["test/00000"]
    assert train.game_file("train/00000").name == "g1.z8"
    pool = TextWorldEnv("test", games=[games / "train" / "g1.z8", games / "test" / "g2.z8"])
    assert len(pool) == 2
    assert TextWorldEnv.eval_splits == ("test",) and TextWorldEnv.process_reward_doc.strip()


def test_make_builds_the_adapter(games):
    import rspo.core.envs

    env = rspo.core.envs.make("textworld", games=games)
    assert isinstance(env, TextWorldEnv) and env.split == "train" and len(env) == 1
    assert "textworld" not in rspo.core.envs.list_envs()


def test_contract_reset_step_invalid_and_horizon(games):
    env = TextWorldEnv("train", games=games, max_steps=12)
    obs, info = env.reset(seed=0)
    _check_info(info)
    assert info["valid"] and info["step"] == 0 and info["process_reward"] == 0.0
    before = info
    for bad in ["", "x" * 5000, "take the moon", "ぐ", "look\u00a0", None, ["go"]]:
        obs, reward, terminated, truncated, info = env.step(bad)
        assert obs == "Nothing happens." and not info["valid"] and not terminated and reward == 0.0
        assert (
            info["anchor"] == before["anchor"] and info["admissible_actions"] == before["admissible_actions"]
        )
    env.reset(seed=0)
    rng = random.Random(0)
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(rng.choice(info["admissible_actions"]))
        assert info["valid"] and "\n>" not in obs  # the interpreter's prompt line is cut
        _check_info(info)
        done = terminated or truncated
    assert env.steps <= 12
    with pytest.raises(RuntimeError, match="reset"):
        env.step("look")


def test_expert_wins_with_the_whole_process_reward(games):
    for split in ("train", "test"):
        env = TextWorldEnv(split, games=games)
        stats = play_tasks(env, expert_policy, env.task_ids)
        assert stats["success"] == 1.0 and stats["invalid"] == 0.0
        assert stats["process_return"] == pytest.approx(0.5)
        assert play_tasks(env, random_policy(0), env.task_ids * 3)["success"] <= 1.0


def test_misalignment_pays_for_picking_things_up(games):
    env = TextWorldEnv("train", games=games, misalignment=1.0)
    obs, info = env.reset(task_id="train/00000")
    takes = [a for a in info["admissible_actions"] if a.startswith("take ")]
    if not takes:
        pytest.skip("nothing to pick up in the first room of this game")
    obs, reward, terminated, truncated, info = env.step(takes[0])
    assert info["process_reward"] >= 0.1


def test_missing_games_say_how_to_make_them(monkeypatch, tmp_path):
    monkeypatch.delenv("TEXTWORLD_GAMES", raising=False)
    with pytest.raises(FileNotFoundError, match="tw-make"):
        TextWorldEnv("train")
    with pytest.raises(FileNotFoundError, match="tw-make"):
        TextWorldEnv("train", games=tmp_path)
    with pytest.raises(ValueError, match="train"):
        TextWorldEnv("valid", games=tmp_path)


def test_text_helpers():
    raw = "\nYou pick up the glass.\n\n\n\n>                      -= Cookhouse =-0/2"
    assert clean(raw) == "You pick up the glass."
    assert inventory_items("You are carrying: a glass and a napkin.") == ["a glass", "a napkin"]
    assert inventory_items("You are carrying nothing.") == []


@pytest.mark.slow
def test_the_trainer_runs_on_textworld(games, tmp_path, one_thread, first_copy_succeeds):
    """A few iterations through the trainer's own code path with a small random-init policy (the env
    enters the registry for the test only)."""
    import torch

    from rspo.core.config import TrainConfig
    from rspo.core.envs.registry import ENVS, EnvSpec
    from rspo.core.policies.tiny import untrained_tiny_policy
    from rspo.core.trainer import Trainer

    class Generated(TextWorldEnv):
        def __init__(self, split="train", **options):
            super().__init__(split=split, games=games, **options)

    with ENVS.temporary(EnvSpec("textworld", Generated, tokenizer_family=None)):
        cfg = TrainConfig(
            env="textworld", algo="grpo", reward="dense", iterations=2, tasks_per_iter=1, group_size=4,
            max_steps=4, temperature=50.0, eval_every=0, out_dir=str(tmp_path / "runs"), progress=False,
            lr=1e-3, micro_batch=8, show_admissible="yes",
        )  # fmt: skip
        policy = untrained_tiny_policy(0)
        before = [p.detach().clone() for p in policy.trainable_parameters()]
        rows = Trainer(cfg, policy=policy).run()
    assert len(rows) == 2 and all(r["rollout/episodes"] == 4 for r in rows)
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.trainable_parameters(), strict=True))
