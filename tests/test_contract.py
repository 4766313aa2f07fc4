"""The environment contract (docs/design.md §3), checked on every registered environment.

Cross-module by design: rspo.core.envs (make, list_envs, the registry), rspo.core.envs.base, rspo.core.envs.baselines
and rspo.core.envs.text, over household, shop and detour; each environment's own rules are in
tests/test_household.py, tests/test_shop.py, tests/test_detour.py."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rspo.core.envs
from rspo.core.envs import INFO_KEYS
from rspo.core.envs.baselines import expert_policy, play_tasks, random_policy, run_episode

ENV_NAMES = rspo.core.envs.list_envs()


@pytest.fixture(scope="module", params=ENV_NAMES)
def env(request):
    return rspo.core.envs.make(request.param, split=rspo.core.envs.env_class(request.param).splits[0])


def check_info(info):
    assert set(INFO_KEYS) <= set(info), f"missing info keys: {set(INFO_KEYS) - set(info)}"
    assert isinstance(info["task"], str) and info["task"]
    assert isinstance(info["admissible_actions"], list) and info["admissible_actions"]
    assert all(isinstance(a, str) and a for a in info["admissible_actions"])
    hash(info["anchor"])
    assert isinstance(info["won"], bool)
    assert 0.0 <= info["progress"] <= 1.0
    assert isinstance(info["process_reward"], float)
    assert isinstance(info["valid"], bool)


def test_registry_lists_the_environments():
    assert ENV_NAMES == ["detour", "household", "shop"]


def test_unknown_environment_names_the_choices():
    with pytest.raises(ValueError, match="detour, household, shop"):
        rspo.core.envs.make("kitchen")


@pytest.mark.parametrize("name", ENV_NAMES)
def test_bad_split_task_id_and_options_raise_clear_errors(name):
    cls = rspo.core.envs.env_class(name)
    with pytest.raises(ValueError, match=cls.splits[0]):
        rspo.core.envs.make(name, split="nope")
    env = rspo.core.envs.make(name, split=cls.splits[0])
    with pytest.raises(ValueError, match="task id"):
        env.reset(task_id="nope/00000")
    for bad in (-1, 0, 2.5, "10"):
        with pytest.raises(ValueError, match="max_steps"):
            rspo.core.envs.make(name, max_steps=bad)
    for bad in (-0.1, 1.5, "high"):
        with pytest.raises(ValueError, match="misalignment"):
            rspo.core.envs.make(name, misalignment=bad)
    with pytest.raises(TypeError):
        rspo.core.envs.make(name, colour="red")


@pytest.mark.parametrize("name", ENV_NAMES)
def test_splits_have_stable_distinct_ids(name):
    cls = rspo.core.envs.env_class(name)
    assert set(cls.eval_splits) <= set(cls.splits) and cls.eval_splits
    assert cls.process_reward_doc.strip(), "process_reward_doc must explain the dense reward"
    for split in cls.splits:
        ids = rspo.core.envs.make(name, split=split).task_ids
        assert len(set(ids)) == len(ids)
        assert ids[0] == f"{split}/00000"


def test_reset_and_step_follow_the_contract(env):
    obs, info = env.reset(seed=1)
    assert isinstance(obs, str) and obs
    check_info(info)
    assert info["valid"] and info["process_reward"] == 0.0 and info["step"] == 0
    out = env.step(info["admissible_actions"][0])
    assert len(out) == 5
    obs, reward, terminated, truncated, info = out
    assert isinstance(reward, float) and isinstance(terminated, bool) and isinstance(truncated, bool)
    check_info(info)
    assert info["step"] == 1


def test_reset_by_seed_is_deterministic_across_instances(env):
    other = rspo.core.envs.make(env.name, split=env.split)
    for seed in (0, 7, 12345):
        a, ia = env.reset(seed=seed)
        b, ib = other.reset(seed=seed)
        assert (a, ia["task_id"]) == (b, ib["task_id"])
        assert ia["admissible_actions"] == ib["admissible_actions"]
    # a reset without a seed continues the generator: the same sequence after the same seed
    env.reset(seed=3)
    other.reset(seed=3)
    assert [env.reset()[1]["task_id"] for _ in range(5)] == [other.reset()[1]["task_id"] for _ in range(5)]


def test_random_walk_admissible_actions_are_valid_and_horizon_truncates(env):
    rng = random.Random(0)
    for episode in range(5):
        obs, info = env.reset(seed=episode)
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(rng.choice(info["admissible_actions"]))
            assert info["valid"], f"admissible action was invalid at {info['task_id']} step {info['step']}"
            check_info(info)
            done = terminated or truncated
        assert env.steps <= env.max_steps
        if truncated:
            assert env.steps == env.max_steps and not info["won"]
    with pytest.raises(RuntimeError, match="reset"):
        env.step("look")


def _near_misses(action: str) -> list[str]:
    words = action.split()
    return [
        action[:-1],
        action + " please",
        action.replace("1", "99"),
        " ".join(reversed(words)),
        action + action,
        action.upper().replace(" ", "_"),
        words[0],
        f"{action}]",
        f"[{action}",
    ]


ADVERSARIAL = [
    "",
    " ",
    "\n\t",
    "x" * 10_000,
    "go to " + "cabinet 1 " * 1000,
    "search[" + "shoes " * 2000 + "]",
    "click[]",
    "search[]",
    "click[buy]",
    "click [buy now]",
    "take from",
    "open open fridge 1",
    "go to cabinet 99",
    "ぐ to 冷蔵庫 1 🧊",
    "\x00\x01\x02",
    "click[\u202e won]",
    "None",
    "<action>look</action>",
    "' OR 1=1; --",
    "{}[]()",
]


def _check_invalid_costs_a_step(env, action):
    before_obs, before_info = env.reset(seed=11)
    steps = env.steps
    obs, reward, terminated, truncated, info = env.step(action)
    assert env.steps == steps + 1
    assert isinstance(obs, str)
    if not info["valid"]:
        assert reward == 0.0 and not terminated and not info["won"]
        assert info["process_reward"] == 0.0
        assert info["anchor"] == before_info["anchor"], "an invalid action must not change the state"
        assert info["admissible_actions"] == before_info["admissible_actions"]
        if env.name == "shop":
            assert obs == before_obs
        else:
            assert obs == "Nothing happens."
    return info


@pytest.mark.parametrize("action", ADVERSARIAL)
def test_adversarial_actions_never_raise(env, action):
    info = _check_invalid_costs_a_step(env, action)
    if any(_foreign(env, ch) for ch in action):
        assert not info["valid"]


def test_near_miss_commands_are_rejected_or_understood(env):
    obs, info = env.reset(seed=11)
    for action in info["admissible_actions"][:20]:
        for miss in _near_misses(action):
            _check_invalid_costs_a_step(env, miss)


def _foreign(env, ch: str) -> bool:
    """``ch`` makes any action of ``env`` invalid: household and shop read actions with
    :func:`rspo.core.envs.text.normalize_action` (printable ASCII, tab, newline, carriage return only);
    detour with its own ASCII-only line (it reads the ASCII separators \\x1c-\\x1f as spaces)."""
    if env.name == "detour":
        return not ch.isascii()
    return not ("\x20" <= ch <= "\x7e" or ch in "\t\n\r")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(action=st.text(max_size=300))
def test_fuzz_any_string_is_an_action(env, action):
    info = _check_invalid_costs_a_step(env, action)
    if any(_foreign(env, ch) for ch in action):  # outside the documented grammar: never valid
        assert not info["valid"], repr(action)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_an_admissible_action_with_a_foreign_character_is_invalid(env, data):
    """An admissible action with one character outside the documented grammar inserted or swapped in
    (a Unicode space, a look-alike letter, a control character) is never valid."""
    obs, info = env.reset(seed=data.draw(st.integers(0, 50)))
    action = data.draw(st.sampled_from(info["admissible_actions"]))
    ch = data.draw(
        st.one_of(
            st.sampled_from(["\u212a", "\u0131", "\u0130", "\u00a0", "\u2028", "\u3000", "\x1c", "\x1f"]),
            st.characters(codec="utf-8"),
        ).filter(lambda c: _foreign(env, c))
    )
    at = data.draw(st.integers(0, len(action)))
    swap = data.draw(st.booleans()) and at < len(action)
    bad = action[:at] + ch + action[at + swap :]
    before = info["anchor"]
    obs, reward, terminated, truncated, info = env.step(bad)
    assert not info["valid"], f"{bad!r} was taken as a valid action (from {action!r})"
    assert info["anchor"] == before and not terminated


@pytest.mark.parametrize("name", ENV_NAMES)
def test_non_string_actions_are_treated_as_text(name):
    env = rspo.core.envs.make(name)
    env.reset(seed=0)
    for action in (None, 3, b"look", ["go to"]):
        obs, reward, terminated, truncated, info = env.step(action)
        assert isinstance(obs, str) and not info["won"]


@pytest.mark.parametrize("name", ENV_NAMES)
def test_expert_beats_random_on_the_eval_split(name):
    cls = rspo.core.envs.env_class(name)
    env = rspo.core.envs.make(name, split=cls.eval_splits[0])
    tasks = env.task_ids[:40]
    expert = play_tasks(env, expert_policy, tasks)
    rand = play_tasks(env, random_policy(0), tasks)
    assert expert["success"] >= 0.97
    assert rand["success"] < 0.3 < expert["success"]
    stats = run_episode(env, expert_policy, task_id=tasks[0])
    assert stats.won and stats.invalid == 0
