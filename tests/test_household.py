"""The household environment: rules, observations, goals, splits, the expert and the process reward."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

import rspo.envs
from rspo.envs.household import PROCESS_REWARD_DOC, HouseholdEnv
from rspo.envs.household.catalog import HEAT_T, LOOK, SIMPLE, SPLIT_COUNTS, TWO
from rspo.envs.household.engine import NOTHING, Goal, World
from rspo.envs.household.expert import expert_action
from rspo.envs.household.process import MILESTONES
from rspo.envs.household.tasks import build_tasks, build_world, dumps, load_tasks
from rspo.envs.household.world import Layout, _make_layout, get_layout, layout_is_seen

ROOT = Path(__file__).resolve().parents[1]
SPLITS = ("train", "valid_seen", "valid_unseen")


@pytest.fixture(scope="module")
def envs():
    return {split: HouseholdEnv(split=split) for split in SPLITS}


def small_world(task_type=HEAT_T, obj="apple", recep="countertop", lamp=None, m=0.0, text="heat some apple."):
    """A hand-made kitchen: apple 1 in drawer 1 (closed), bread 1 and mug 1 on countertop 1."""
    layout = Layout(
        0,
        "kitchen",
        [
            ("countertop", 1),
            ("diningtable", 1),
            ("drawer", 1),
            ("fridge", 1),
            ("microwave", 1),
            ("sinkbasin", 1),
        ]
        + [("sidetable", 1)],
    )
    kinds = ["apple", "bread", "mug", "desklamp", "apple"]
    where = [2, 0, 0, 6, 3]  # drawer 1, countertop 1, countertop 1, sidetable 1, fridge 1
    return World(layout, kinds, where, Goal(task_type, obj, recep, lamp, text), m)


def run(w: World, actions):
    out = []
    for a in actions:
        out.append(w.step(a))
    return out


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
                assert sum(a.startswith("go to ") for a in acts) == len(w.layout.rnames) - (w.loc >= 0)
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
        later = [r for r in range(len(w.layout.rnames)) if r not in first_seen] + order[1:]
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
            return "open " + L.rnames[goal_r]
        return f"move {w.oname[o]} to {L.rnames[goal_r]}"
    for r in [w.loc] + w.seen_list:
        if r < 0 or r == goal_r:
            continue
        for o in w.contents[r]:
            if not w.is_lamp[o] and w.okind[o] != w.goal.obj and o not in w.farmed["take"]:
                if w.loc != r:
                    return L.goto[r]
                if L.openable[r] and not w.is_open[r]:
                    return "open " + L.rnames[r]
                return f"take {w.oname[o]} from {L.rnames[r]}"
    if w.loc >= 0 and not w.seen[w.loc]:
        return "open " + L.rnames[w.loc]
    return next(L.goto[r] for r in range(len(L.rnames)) if not w.seen[r])


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
    assert "PROCESS_REWARD_DOC" in (rspo.envs.household.__doc__ or "")


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
        assert 15 <= len(w.layout.rnames) <= 40
        assert 20 <= len(w.okind) <= 60
        assert w.layout.room == t["room"]


def test_reset_by_seed_is_deterministic_and_fast():
    a, b = HouseholdEnv(split="train"), HouseholdEnv(split="train")
    for seed in (0, 1, 99):
        oa, ia = a.reset(seed=seed)
        ob, ib = b.reset(seed=seed)
        assert (oa, ia["task_id"], ia["admissible_actions"]) == (ob, ib["task_id"], ib["admissible_actions"])
        assert a.world.where == b.world.where and a.world.oname == b.world.oname
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
    assert isinstance(rspo.envs.make("household", split="valid_unseen"), HouseholdEnv)
