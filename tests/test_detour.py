"""The credit-assignment lab's environment, ``detour``: splits, rewards, the detour, the expert."""

from __future__ import annotations

import random

import pytest

import rspo.core.envs
from rspo.core.envs.baselines import expert_policy, play_tasks, run_episode
from rspo.core.envs.detour import (
    LURE,
    MECHANISMS,
    MILESTONES,
    DetourEnv,
    layout,
    random_success,
    split_sequences,
)


def test_test_layouts_never_occur_in_train():
    for length in (3, 4, 5, 6):
        seqs = split_sequences(length)
        assert seqs["train"] and seqs["test"]
        assert not set(seqs["train"]) & set(seqs["test"])
        # every mechanism occurs at every gate position in train: the test split asks nothing new
        for pos in range(length - 1):
            assert {seq[pos] for seq in seqs["train"]} == set(MECHANISMS)
    env, test_env = DetourEnv("train"), DetourEnv("test")
    train = {tuple(env.task_layout(t)) for t in env.task_ids}
    test = {tuple(test_env.task_layout(t)) for t in test_env.task_ids}
    assert test and not train & test


@pytest.mark.parametrize("split", ["train", "test"])
def test_expert_solves_every_task_in_length_steps(split):
    env = DetourEnv(split)
    for task_id in env.task_ids:
        stats = run_episode(env, expert_policy, task_id=task_id)
        assert stats.won and stats.steps == env.length and stats.invalid == 0
        assert stats.process_return == pytest.approx(MILESTONES)
        assert stats.outcome_reward == 1.0


def test_random_play_is_sparse_and_the_knobs_move_it():
    # the defaults: a uniformly random policy wins in about 1% of episodes (sparsity)
    assert 0.003 < random_success(4000) < 0.03
    # fewer rooms and no distractors: much easier
    assert random_success(4000, length=3, distractors=0) > 0.2


def _play(env, actions):
    total_process, won = 0.0, False
    for a in actions:
        _, reward, terminated, truncated, info = env.step(a)
        assert info["valid"], a
        total_process += info["process_reward"]
        won = info["won"]
        if terminated or truncated:
            break
    return total_process, won


@pytest.mark.parametrize("m", [0.0, 0.5, 1.0])
def test_the_map_pays_m_times_lure_every_time(m):
    env = DetourEnv("train", misalignment=m)
    env.reset(task_id="train/00000")
    process, won = _play(env, ["read map"] * 12)
    assert not won and env.done
    assert process == pytest.approx(12 * m * LURE)


def test_at_m1_farming_out_earns_solving_and_at_m0_it_earns_nothing():
    def best_mixed(m):  # read the map k times, then solve: the best a solver can earn
        env = DetourEnv("train", misalignment=m)
        best = 0.0
        for k in range(env.max_steps - env.length + 1):
            env.reset(task_id="train/00001")
            process, won = _play(env, ["read map"] * k)
            while not env.done:
                _, r, _, _, info = env.step(env.expert_action())
                process += info["process_reward"]
                won = info["won"]
            assert won
            best = max(best, 1.0 + process)
        return best

    farm = DetourEnv("train", misalignment=1.0).max_steps * LURE
    assert farm > best_mixed(1.0)
    assert best_mixed(0.0) == pytest.approx(1.0 + MILESTONES)


def test_milestones_are_paid_once_per_gate():
    env = DetourEnv("train")
    env.reset(task_id="train/00002")
    first = env.expert_action()
    _, _, _, _, info = env.step(first)
    assert info["process_reward"] == pytest.approx(MILESTONES / (env.length - 1))
    _, _, _, _, info = env.step("go west")
    assert info["process_reward"] == 0.0 and info["progress"] == pytest.approx(1 / env.length)
    _, _, _, _, info = env.step("go east")
    assert info["process_reward"] == 0.0


def test_anchor_is_the_state_and_ignores_how_it_was_reached():
    env = DetourEnv("train")
    _, info = env.reset(task_id="train/00004")
    start = info["anchor"]
    _, _, _, _, info = env.step("look")
    assert info["anchor"] == start
    _, _, _, _, info = env.step("wait")
    assert info["anchor"] == start


def test_observations_and_prompts_are_short():
    from rspo.core.rollout import AgentView

    env = DetourEnv("train", misalignment=1.0)
    rng = random.Random(0)
    longest = 0
    for task_id in env.task_ids[:50]:
        obs, info = env.reset(task_id=task_id)
        view = AgentView(env, history=1, show_admissible=False)
        view.start(obs, info)
        while not env.done:
            longest = max(longest, len(view.prompt().split()))
            a = rng.choice(info["admissible_actions"])
            obs, _, _, _, info = env.step(a)
            view.record(a, obs, info)
        assert len(info["admissible_actions"]) <= 12
    assert longest <= 90  # words; about 110 tokens with the lab's tokenizer


def test_options_are_validated():
    for bad in (2, 9, 3.0, True):
        with pytest.raises(ValueError, match="length"):
            DetourEnv(length=bad)
    for bad in (-1, 4, "1"):
        with pytest.raises(ValueError, match="distractors"):
            DetourEnv(distractors=bad)
    with pytest.raises(RuntimeError, match="reset"):
        DetourEnv().expert_action()


def test_look_alike_letters_are_not_actions():
    env = DetourEnv("train")
    env.reset(task_id="train/00000")
    for action in ("loo\u212a", "re\u0430d map", "wait\u00a0", "LOOK", "  read   map "):
        _, _, _, _, info = env.step(action)
        assert info["valid"] == action.isascii(), action


def test_layouts_are_stable():
    a = layout("train", 7, 6, 1)
    assert a == layout("train", 7, 6, 1)
    assert len(a) == 6 and a[-1][0] is None and a[-1][2] == ()
    expert = play_tasks(
        rspo.core.envs.make("detour", split="test"), expert_policy, DetourEnv("test").task_ids[:20]
    )
    assert expert["success"] == 1.0
