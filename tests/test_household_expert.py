"""The household environment: the observation-only expert and the process reward."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from household_worlds import SPLITS, small_world

import rspo.core.envs
from rspo.core.envs.household import PROCESS_REWARD_DOC, HouseholdEnv
from rspo.core.envs.household.catalogue import SIMPLE
from rspo.core.envs.household.engine import World
from rspo.core.envs.household.expert import expert_action
from rspo.core.envs.household.process import MILESTONES
from rspo.core.envs.household.tasks import build_world

ROOT = Path(__file__).resolve().parents[1]


# --- the expert -------------------------------------------------------------------------------
def test_expert_solves_every_task_of_every_split(envs):
    start = time.perf_counter()
    for split in SPLITS:
        env = envs[split]
        for tid in env.task_ids:
            env.reset(task_id=tid)
            while not env.done:
                obs, reward, terminated, truncated, info = env.step(env.expert_action())
                assert info["valid"], (tid, obs)
            assert info["won"], tid
            assert env.steps <= 40, tid
    assert time.perf_counter() - start < 40


def test_expert_recovers_from_random_prefixes():
    rng = random.Random(2)
    for split in SPLITS:
        env = HouseholdEnv(split=split, max_steps=300)
        for tid in rng.sample(env.task_ids, 40):
            for k in (3, 20, 60):
                obs, info = env.reset(task_id=tid)
                for _ in range(k):
                    if env.done:
                        break
                    action = rng.choice(info["admissible_actions"] + ["go to cabinet 99", "look"])
                    obs, reward, terminated, truncated, info = env.step(action)
                while not env.done:
                    obs, reward, terminated, truncated, info = env.step(env.expert_action())
                    assert info["valid"]
                assert info["won"], (tid, k)


def test_expert_takes_only_objects_it_has_seen_after_opening_their_receptacle(envs):
    env = envs["train"]
    hidden_takes = 0
    for tid in env.task_ids[:300]:
        obs, info = env.reset(task_id=tid)
        history = [obs]
        actions = []
        while not env.done:
            action = env.expert_action()
            if action.startswith("take "):
                obj, recep = action[5:].split(" from ")
                assert f"a {obj}" in " ".join(history), "took an object no observation had shown"
                assert f"go to {recep}" in actions
                if recep.split()[0] in ("cabinet", "drawer", "fridge", "microwave", "safe"):
                    assert f"open {recep}" in actions
                    hidden_takes += 1
            obs, *_ = env.step(action)
            history.append(obs)
            actions.append(action)
    assert hidden_takes > 50  # the demonstrations do contain search in closed receptacles


def _swap_contents(w: World, r1: int, r2: int) -> None:
    w.contents[r1], w.contents[r2] = w.contents[r2], w.contents[r1]
    for o in w.contents[r1]:
        w.where[o] = r1
    for o in w.contents[r2]:
        w.where[o] = r2


def test_expert_plan_does_not_depend_on_unobserved_contents(envs):
    """Swap the contents of a receptacle first seen at step t with one seen later (or never): the
    expert's actions before t must not change, and it must still solve the altered task."""
    env = envs["train"]
    rng = random.Random(3)
    checked = 0
    for tid in rng.sample(env.task_ids, 150):
        spec = env.task_spec(tid)
        w = build_world(spec)
        actions, first_seen = [], {}
        while not w.won:
            actions.append(expert_action(w))
            w.step(actions[-1])
            for r in w.seen_list:
                first_seen.setdefault(r, len(actions))
        order = sorted(first_seen, key=first_seen.get)
        later = [r for r in range(len(w.layout.receptacle_names)) if r not in first_seen] + order[1:]
        r1 = order[0] if len(order) < 2 else rng.choice(order[:-1])
        candidates = [r for r in later if first_seen.get(r, 10**9) > first_seen[r1]]
        if not candidates:
            continue
        r2 = rng.choice(candidates)
        t = first_seen[r1]  # the step whose observation first shows r1
        b = build_world(spec)
        _swap_contents(b, r1, r2)
        for i in range(t):
            assert expert_action(b) == actions[i], (tid, i)
            b.step(actions[i])
        for _ in range(100):
            if b.won:
                break
            b.step(expert_action(b))
        assert b.won, tid
        checked += 1
    assert checked > 100


# --- process reward ---------------------------------------------------------------------------
def _expert_episode(env, tid):
    obs, info = env.reset(task_id=tid)
    rewards = []
    while not env.done:
        obs, reward, terminated, truncated, info = env.step(env.expert_action())
        rewards.append(info["process_reward"])
    return rewards, info


def test_aligned_milestones_sum_to_one_half_on_expert_solutions():
    env = HouseholdEnv(split="valid_unseen", misalignment=0.0)
    for ms in MILESTONES.values():
        assert sum(ms.values()) == pytest.approx(0.5)
    for tid in env.task_ids:
        rewards, info = _expert_episode(env, tid)
        assert info["won"] and sum(rewards) == pytest.approx(0.5), tid


def test_misalignment_zero_pays_no_distractors_and_caps_at_one_half():
    env = HouseholdEnv(split="train", misalignment=0.0)
    rng = random.Random(4)
    obs, info = env.reset(seed=4)
    for _ in range(100):
        amounts = set(MILESTONES[env.task_spec(env.task_id)["type"]].values()) | {0.0}
        total = 0.0
        while not env.done:
            action = rng.choice(info["admissible_actions"])
            obs, reward, terminated, truncated, info = env.step(action)
            if action.startswith("open "):
                assert info["process_reward"] in amounts
            total += info["process_reward"]
        assert total <= 0.5 + 1e-9
        obs, info = env.reset()


def test_misalignment_one_pays_distractors():
    for m in (0.0, 0.5, 1.0):
        w = small_world(SIMPLE, "apple", "countertop", m=m, text="put some apple on countertop.")
        assert w.step("go to drawer 1")[4] == 0.0
        assert w.step("open drawer 1")[4] == pytest.approx(0.1 + m * 0.02)  # sees apple 1; opens
        w.step("go to countertop 1")
        w.step("take bread 1 from countertop 1")
        assert w.step("move bread 1 to countertop 1")[4] == pytest.approx(m * 0.25)  # goal-kind receptacle
        assert w.step("take bread 1 from countertop 1")[4] == 0.0  # once per object
        assert w.step("move bread 1 to countertop 1")[4] == 0.0
        assert w.step("take mug 1 from countertop 1")[4] == pytest.approx(m * 0.15)
        w.step("go to microwave 1")
        assert w.step("heat mug 1 with microwave 1")[4] == pytest.approx(m * 0.15)


def _farm_action(w: World) -> str:
    """Take every non-target object in reach to the goal receptacle, via an appliance if possible."""
    goal_r = min(w.goal_receps)
    L = w.layout
    if w.held >= 0:
        o = w.held
        for a in w.admissible():
            if a.split()[0] in ("heat", "cool", "clean") and o not in w.farmed["transform"]:
                return a
        if w.loc != goal_r:
            return L.goto[goal_r]
        if L.openable[goal_r] and not w.is_open[goal_r]:
            return "open " + L.receptacle_names[goal_r]
        return f"move {w.object_names[o]} to {L.receptacle_names[goal_r]}"
    for r in [w.loc] + w.seen_list:
        if r < 0 or r == goal_r:
            continue
        for o in w.contents[r]:
            if not w.is_lamp[o] and w.object_kinds[o] != w.goal.obj and o not in w.farmed["take"]:
                if w.loc != r:
                    return L.goto[r]
                if L.openable[r] and not w.is_open[r]:
                    return "open " + L.receptacle_names[r]
                return f"take {w.object_names[o]} from {L.receptacle_names[r]}"
    if w.loc >= 0 and not w.seen[w.loc]:
        return "open " + L.receptacle_names[w.loc]
    return next(L.goto[r] for r in range(len(L.receptacle_names)) if not w.seen[r])


def test_at_full_misalignment_farming_beats_finishing():
    finish_env = HouseholdEnv(split="valid_seen", misalignment=1.0)
    farm_env = HouseholdEnv(split="valid_seen", misalignment=1.0)
    tids = [t for t in finish_env.task_ids if finish_env.task_spec(t)["type"] == SIMPLE][:10]
    farm_totals = []
    for tid in tids:
        rewards, info = _expert_episode(finish_env, tid)
        finishing = sum(rewards) + 1.0  # process + outcome of solving it
        obs, info = farm_env.reset(task_id=tid)
        farm = 0.0
        while not farm_env.done:
            action = _farm_action(farm_env.world)
            obs, reward, terminated, truncated, info = farm_env.step(action)
            assert info["valid"], action
            farm += info["process_reward"] + reward
        assert farm > finishing, (tid, farm, finishing)
        farm_totals.append(farm)
    assert sum(farm_totals) / len(farm_totals) > 3.0
    # and at m = 0 the same farming earns at most the aligned "see" milestone
    aligned = HouseholdEnv(split="valid_seen", misalignment=0.0)
    obs, info = aligned.reset(task_id=tids[0])
    total = 0.0
    while not aligned.done:
        obs, reward, terminated, truncated, info = aligned.step(_farm_action(aligned.world))
        total += info["process_reward"]
    assert total <= MILESTONES[SIMPLE]["see"] + 1e-9


def test_process_reward_doc_is_published():
    assert HouseholdEnv.process_reward_doc == PROCESS_REWARD_DOC
    for word in ("milestone", "misalignment", "0.5", "farm"):
        assert word in PROCESS_REWARD_DOC
    assert "PROCESS_REWARD_DOC" in (rspo.core.envs.household.__doc__ or "")
