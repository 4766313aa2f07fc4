"""The household environment: rules, observations, goals, random walks, splits and determinism."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from household_worlds import SPLITS, run, small_world

import rspo.core.envs
from rspo.core.envs.household import HouseholdEnv
from rspo.core.envs.household.catalogue import LOOK, SPLIT_COUNTS, TWO
from rspo.core.envs.household.engine import NOTHING
from rspo.core.envs.household.tasks import build_tasks, build_world, dumps, load_tasks
from rspo.core.envs.household.world import _make_layout, get_layout, layout_is_seen

ROOT = Path(__file__).resolve().parents[1]


# --- rules and observations -------------------------------------------------------------------
def test_first_observation_is_alfworld_style(envs):
    obs, info = envs["valid_seen"].reset(task_id="valid_seen/00000")
    assert obs.startswith("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. ")
    assert "Looking quickly around you, you see a " in obs and ", and a " in obs
    assert obs.endswith("\n\nYour task is to: " + info["task"])
    assert info["anchor"] == obs and info["progress"] == 0.0 and not info["won"]


def test_opening_reveals_contents_and_closed_receptacles_hide_them():
    w = small_world()
    obs, _, _, valid, _ = w.step("go to drawer 1")
    assert valid and obs == "You arrive at drawer 1. The drawer 1 is closed."
    assert "take apple 1 from drawer 1" not in w.admissible()
    obs, _, _, valid, _ = w.step("take apple 1 from drawer 1")
    assert obs == NOTHING and not valid
    obs, _, _, valid, _ = w.step("open drawer 1")
    assert obs == "You open the drawer 1. The drawer 1 is open. In it, you see a apple 1."
    assert w.step("take apple 1 from drawer 1")[0] == "You pick up the apple 1 from the drawer 1."
    assert w.step("inventory")[0] == "You are carrying: a apple 1."
    assert w.step("close drawer 1")[0] == "You close the drawer 1."
    assert w.step("examine drawer 1")[0] == "The drawer 1 is closed."
    obs = w.step("go to countertop 1")[0]
    assert obs == "You arrive at countertop 1. On the countertop 1, you see a bread 1, and a mug 1."
    assert w.step("go to countertop 1")[0] == NOTHING  # already there


def test_holding_limit_is_one_object():
    w = small_world()
    run(w, ["go to countertop 1", "take bread 1 from countertop 1"])
    assert w.held >= 0
    assert not any(a.startswith("take ") for a in w.admissible())
    assert w.step("take mug 1 from countertop 1") == (NOTHING, 0.0, False, False, 0.0)
    assert w.step("move bread 1 to countertop 1")[0] == "You move the bread 1 to the countertop 1."
    assert w.step("take mug 1 from countertop 1")[3]


def test_heat_cool_clean_need_the_right_appliance_and_change_state():
    w = small_world()
    run(w, ["go to countertop 1", "take mug 1 from countertop 1", "go to fridge 1"])
    assert w.step("heat mug 1 with fridge 1")[0] == NOTHING
    assert w.step("clean mug 1 with fridge 1")[0] == NOTHING
    assert w.step("cool mug 1 with fridge 1")[0] == "You cool the mug 1 using the fridge 1."
    assert w.step("examine mug 1")[0] == "This is a cool mug 1."
    w.step("go to microwave 1")
    assert w.admissible().count("heat mug 1 with microwave 1") == 1
    assert w.step("heat mug 1 with microwave 1")[0] == "You heat the mug 1 using the microwave 1."
    assert w.step("examine mug 1")[0] == "This is a hot mug 1."  # heating undoes cooling
    w.step("go to sinkbasin 1")
    assert w.step("heat mug 1 with sinkbasin 1")[0] == NOTHING
    assert w.step("clean mug 1 with sinkbasin 1")[0] == "You clean the mug 1 using the sinkbasin 1."
    assert w.step("examine mug 1")[0] == "This is a hot and clean mug 1."
    w.step("go to countertop 1")
    assert w.step("heat mug 1 with countertop 1")[0] == NOTHING


def test_placing_accepts_move_and_put_forms_case_and_spacing():
    w = small_world()
    run(w, ["go to countertop 1", "take bread 1 from countertop 1", "go to diningtable 1"])
    obs, _, _, valid, _ = w.step("  PUT bread 1 in/on   DiningTable 1 ")
    assert valid and obs == "You move the bread 1 to the diningtable 1."
    for form in (
        "put bread 1 in countertop 1",
        "put bread 1 on countertop 1",
        "move bread 1 to countertop 1",
    ):
        w2 = small_world()
        run(w2, ["go to countertop 1", "take bread 1 from countertop 1"])
        assert w2.step(form)[3], form
    w3 = small_world()
    run(w3, ["go to countertop 1", "take bread 1 from countertop 1", "go to fridge 1"])
    assert w3.step("move bread 1 to fridge 1")[0] == NOTHING  # closed
    w3.step("open fridge 1")
    assert w3.step("put bread 1 in fridge 1")[3]


def test_lamp_use_and_look_at_progress():
    text = "look at apple under the desklamp."
    w = small_world(LOOK, "apple", None, "desklamp", text=text)
    w.step("go to sidetable 1")
    assert "take desklamp 1 from sidetable 1" not in w.admissible()
    assert "use desklamp 1" in w.admissible()
    run(w, ["go to fridge 1", "open fridge 1", "take apple 2 from fridge 1"])
    assert w.progress == 0.5 and not w.won
    obs, reward, terminated, valid, _ = w.step("go to sidetable 1")
    assert (reward, terminated) == (0.0, False)
    obs, reward, terminated, valid, _ = w.step("use desklamp 1")
    assert obs == "You turn on the desklamp 1." and (reward, terminated, w.won, w.progress) == (
        1.0,
        True,
        True,
        1.0,
    )


def test_heat_task_progress_step_by_step_and_success():
    w = small_world()
    steps = [
        ("go to drawer 1", 0.0),
        ("open drawer 1", 0.0),
        ("take apple 1 from drawer 1", 0.0),
        ("go to microwave 1", 0.0),
        ("heat apple 1 with microwave 1", 0.5),
        ("go to countertop 1", 0.5),
    ]
    for action, progress in steps:
        obs, reward, terminated, valid, _ = w.step(action)
        assert valid and reward == 0.0 and not terminated and w.progress == progress, action
    obs, reward, terminated, valid, _ = w.step("move apple 1 to countertop 1")
    assert (reward, terminated, w.won, w.progress) == (1.0, True, True, 1.0)


def test_env_win_sets_terminated_reward_and_info(envs):
    env = envs["valid_seen"]
    obs, info = env.reset(task_id="valid_seen/00003")
    reward = terminated = None
    while not env.done:
        obs, reward, terminated, truncated, info = env.step(env.expert_action())
    assert terminated and reward == 1.0 and info["won"] and info["progress"] == 1.0
    assert not truncated


def test_pick_two_progress_counts_placed_objects(envs):
    env = envs["train"]
    tid = next(t for t in env.task_ids if env.task_spec(t)["type"] == TWO)
    obs, info = env.reset(task_id=tid)
    seen = []
    while not env.done:
        obs, reward, terminated, truncated, info = env.step(env.expert_action())
        seen.append(info["progress"])
    assert seen[-1] == 1.0 and 0.5 in seen and set(seen) <= {0.0, 0.5, 1.0}


@pytest.mark.parametrize(
    "action",
    [
        "",
        " ",
        "\n\t",
        "x" * 10_000,
        "go to cabinet 99",
        "take apple from",
        "open open fridge 1",
        "ぐ to 冷蔵庫 1 🧊",
    ]
    + [
        "\x00\x01\x02",
        "go to " + "cabinet 1 " * 1000,
        "take",
        "put",
        "put apple 1 in",
        "move to",
        "look look",
    ],
)
def test_invalid_actions_say_nothing_happens_and_cost_a_step(envs, action):
    env = envs["train"]
    obs0, info0 = env.reset(task_id="train/00001")
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs == "Nothing happens." and not info["valid"] and reward == 0.0 and env.steps == 1
    assert info["anchor"] == info0["anchor"] and info["admissible_actions"] == info0["admissible_actions"]


# --- random walks -----------------------------------------------------------------------------
def test_every_admissible_action_is_valid_on_random_walks():
    rng = random.Random(0)
    for split in SPLITS:
        env = HouseholdEnv(split=split, max_steps=60)
        for _ in range(40):
            obs, info = env.reset(seed=rng.randrange(10**6))
            while not env.done:
                acts = info["admissible_actions"]
                assert len(acts) == len(set(acts)) and "look" in acts and "inventory" in acts
                w = env.world
                assert sum(a.startswith("go to ") for a in acts) == len(w.layout.receptacle_names) - (
                    w.loc >= 0
                )
                obs, reward, terminated, truncated, info = env.step(rng.choice(acts))
                assert info["valid"], (info["task_id"], obs)
                assert obs != NOTHING


def test_random_policy_rarely_succeeds():
    env = HouseholdEnv(split="train")
    rng = random.Random(1)
    wins = 0
    obs, info = env.reset(seed=1)
    for _ in range(200):
        while not env.done:
            obs, reward, terminated, truncated, info = env.step(rng.choice(info["admissible_actions"]))
        wins += info["won"]
        obs, info = env.reset()
    assert wins / 200 < 0.15  # measured: ~0-1%


# --- splits, ids, determinism -----------------------------------------------------------------
def test_task_list_rebuild_is_byte_identical():
    tasks, stats = build_tasks()
    committed = (ROOT / "data" / "household" / "tasks.jsonl").read_text(encoding="utf-8")
    assert dumps(tasks) == committed
    assert len(committed.encode()) < 1_000_000


def test_split_sizes_types_and_stable_ids(envs):
    tasks = load_tasks()
    for split in SPLITS:
        ids = envs[split].task_ids
        assert ids == [f"{split}/{i:05d}" for i in range(len(ids))]
        counts = {}
        for t in tasks[split]:
            counts[t["type"]] = counts.get(t["type"], 0) + 1
        assert counts == SPLIT_COUNTS[split]
    assert [len(envs[s]) for s in SPLITS] == [3553, 140, 134]
    # pinned: these must not change between versions of the kit
    assert envs["train"].task_spec("train/00000")["task"] == "heat some cup and put it in fridge."
    assert envs["valid_unseen"].task_spec("valid_unseen/00133")["id"] == "valid_unseen/00133"


def test_unseen_layouts_are_disjoint_and_seen_tasks_are_new():
    tasks = load_tasks()
    layouts = {s: {t["layout"] for t in tasks[s]} for s in SPLITS}
    assert not layouts["valid_unseen"] & (layouts["train"] | layouts["valid_seen"])
    assert layouts["valid_seen"] <= layouts["train"]
    assert all(layout_is_seen(n) for n in layouts["train"]) and not any(
        map(layout_is_seen, layouts["valid_unseen"])
    )

    def combo(t):
        return (t["layout"], t["type"], t["obj"], t["recep"] or t["lamp"])

    assert not {combo(t) for t in tasks["valid_seen"]} & {combo(t) for t in tasks["train"]}


def test_layouts_and_objects_within_bounds():
    tasks = load_tasks()
    for t in tasks["valid_seen"] + tasks["valid_unseen"] + tasks["train"][:500]:
        w = build_world(t)
        assert 15 <= len(w.layout.receptacle_names) <= 40
        assert 20 <= len(w.object_kinds) <= 60
        assert w.layout.room == t["room"]


def test_reset_by_seed_is_deterministic_and_fast():
    a, b = HouseholdEnv(split="train"), HouseholdEnv(split="train")
    for seed in (0, 1, 99):
        oa, ia = a.reset(seed=seed)
        ob, ib = b.reset(seed=seed)
        assert (oa, ia["task_id"], ia["admissible_actions"]) == (ob, ib["task_id"], ib["admissible_actions"])
        assert a.world.where == b.world.where and a.world.object_names == b.world.object_names
    start = time.perf_counter()
    for tid in a.task_ids[:500]:
        a.reset(task_id=tid)
    assert (time.perf_counter() - start) / 500 < 0.005
    start = time.perf_counter()
    for n in range(40):
        _make_layout(n)  # uncached generation
    assert (time.perf_counter() - start) / 40 < 0.005
    assert get_layout(3) is get_layout(3)


def test_unknown_task_id_and_split_raise_naming_choices():
    env = HouseholdEnv(split="valid_seen")
    with pytest.raises(ValueError, match="valid_seen/00000"):
        env.reset(task_id="valid_seen/99999")
    with pytest.raises(ValueError, match="valid_unseen"):
        HouseholdEnv(split="test")
    assert isinstance(rspo.core.envs.make("household", split="valid_unseen"), HouseholdEnv)
