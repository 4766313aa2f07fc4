"""Environment text: one ASCII-only normalisation of actions (rspo.core.envs.text), the same errors for the
same misuse in every environment, seeds that never alias, and ``rspo play`` surviving any input.

Rows of docs/reliability.md ("Environment text"); the hypothesis fuzz of near-valid actions is in
tests/test_contract.py (``test_fuzz_an_admissible_action_with_a_foreign_character_is_invalid``).
"""

from __future__ import annotations

import pytest

import rspo.core.envs
from rspo import cli
from rspo.core.envs.text import normalize_action

ENV_NAMES = rspo.core.envs.list_envs()
NORMALISED = ["household", "shop"]  # the environments that read actions with rspo.core.envs.text

#: characters the issue found turned into a valid command: separators, spaces, look-alikes
FOREIGN = (
    ["\x1c", "\x1d", "\x1e", "\x1f", "\x00", "\x0b", "\x0c", "\x7f", "\u00a0", "\u2028", "\u2029", "\u3000"]
    + [chr(c) for c in range(0x2000, 0x200B)]
    + ["\u200b", "\ufeff", "\u212a", "\u0131", "\u0130", "\u017f", "\uff4c", "\u00b2"]
)
#: look-alike letters: (ASCII letter, the character whose lower()/casefold() is - or looks like - it)
LOOK_ALIKES = [
    ("k", "\u212a"),
    ("i", "\u0131"),
    ("i", "\u0130"),
    ("s", "\u017f"),
    ("o", "\u03bf"),
    ("l", "\uff4c"),
]


def test_normalize_action_by_hand():
    assert normalize_action("  Go to\tCabinet 1 \n") == "go to cabinet 1"
    assert normalize_action("CLICK[ Buy  Now ]") == "click[ buy now ]"
    assert normalize_action("") == ""
    for bad in ("loo\u212a", "cl\u0131ck[buy now]", "go\x1cto cabinet 1", "look\u00a0", "go to\u3000sofa 1"):
        assert normalize_action(bad) is None, bad
    assert normalize_action(None) is None
    # before: str.lower() and str.split() made these the command itself
    assert " ".join("loo\u212a".lower().split()) == "look"
    assert " ".join("go\x1cto\u2003cabinet 1".lower().split()) == "go to cabinet 1"


def _at(env, depth: int) -> dict:
    """``env`` reset to seed 5 and ``depth`` expert steps on; the info of that state."""
    obs, info = env.reset(seed=5)
    for _ in range(depth):
        info = env.step(env.expert_action())[4]
    return info


def _variants(action: str) -> list[str]:
    """``action`` with one foreign character inserted, replacing a space, or a letter's look-alike."""
    out = []
    for ch in FOREIGN:
        out += [action + ch, ch + action, action[:2] + ch + action[2:]]
        if " " in action:
            out.append(action.replace(" ", ch, 1))
    for ascii_letter, alike in LOOK_ALIKES:
        if ascii_letter in action:
            out.append(action.replace(ascii_letter, alike, 1))
    return out


@pytest.mark.parametrize("name", NORMALISED)
def test_no_admissible_action_with_a_foreign_character_is_valid(name):
    env = rspo.core.envs.make(name, max_steps=100_000)  # invalid steps change nothing but the step count
    tried = 0
    for depth in range(3):
        state = _at(env, depth)
        for action in state["admissible_actions"][:8]:
            for bad in _variants(action):
                obs, reward, terminated, truncated, info = env.step(bad)
                assert not info["valid"], f"{bad!r} was taken as {action!r}"
                assert info["anchor"] == state["anchor"] and reward == 0.0 and not terminated
                tried += 1
            # the control: case and ASCII whitespace are ignored, so these are the command itself
            for same in (action.upper(), f" \t{action}\n", action.replace(" ", "  \t")):
                _at(env, depth)
                assert env.step(same)[4]["valid"], repr(same)
            _at(env, depth)
    assert tried > 1000


@pytest.mark.parametrize("name", NORMALISED)
def test_the_issues_examples_are_invalid(name):
    env = rspo.core.envs.make(name, split=rspo.core.envs.env_class(name).splits[0])
    obs, info = env.reset(seed=0)
    if name == "household":
        go = next(a for a in info["admissible_actions"] if a.startswith("go to "))
        assert {"look", "inventory"} <= set(info["admissible_actions"])  # the plain commands are valid
        cases = ["loo\u212a", "LOO\u212a", "invento\u0280y", "\u0131nventory", go.replace(" ", "\x1c", 1)]
        assert env.step("look")[4]["valid"]  # the control
    else:
        query = info["admissible_actions"][0]  # search[...]
        env.step(query)
        cases = [
            "cl\u0131ck[back to search]",
            "click[back\u00a0to search]",
            "click[back\x1fto search]",
            "\u212aclick[back to search]",
        ]
        assert env.step("click[back to search]")[4]["valid"]  # the control
        env.step(query)
    for bad in cases:
        assert not env.step(bad)[4]["valid"], bad


def test_valid_text_and_observations_are_unchanged_by_the_normalisation():
    """The admissible actions of household and shop are already normalised ASCII, so the rule changes
    no valid action and no observation (and so no warm start's corpus or key)."""
    for name in NORMALISED:
        env = rspo.core.envs.make(name)
        for seed in range(10):
            obs, info = env.reset(seed=seed)
            for _ in range(6):
                for a in info["admissible_actions"]:
                    assert normalize_action(a) == a, a
                obs, _, terminated, truncated, info = env.step(env.expert_action())
                if terminated or truncated:
                    break


@pytest.mark.parametrize("name", ENV_NAMES)
def test_a_negative_seed_is_refused_the_same_way_everywhere(name):
    env = rspo.core.envs.make(name)
    for bad in (-1, -12345, True, 1.0, "1"):
        with pytest.raises(ValueError, match="seed must be a non-negative int or None"):
            env.reset(seed=bad)
    a = [env.reset(seed=1)[1]["task_id"]] + [env.reset()[1]["task_id"] for _ in range(4)]
    b = [env.reset(seed=2)[1]["task_id"]] + [env.reset()[1]["task_id"] for _ in range(4)]
    assert a != b


@pytest.mark.parametrize("name", ENV_NAMES)
def test_expert_and_step_before_reset_raise_the_same_error_everywhere(name):
    env = rspo.core.envs.make(name)
    with pytest.raises(RuntimeError, match=r"^call reset\(\) before expert_action\(\)$"):
        env.expert_action()
    with pytest.raises(RuntimeError, match=r"^call reset\(\) before step\(\)$"):
        env.step("look")


@pytest.mark.parametrize("name", ENV_NAMES)
def test_play_never_exits_on_a_typo_or_odd_input(name):
    odd = [
        "\u00b2",
        "\u0663",
        "\u00bd",
        "9" * 5000,
        "999",
        "-1",
        "go to fridg",
        "loo\u212a",
        "\x1c",
        "",
        "   ",
    ]
    lines, it = [], iter([*odd, "q"])
    args = cli.build_parser().parse_args(["play", name, "--seed", "0", "--max-steps", "50"])
    assert cli.play(args, read=lambda prompt: next(it), write=lines.append) == 0
    out = "\n".join(lines)
    assert out.endswith("Stopped.")
    assert out.count("is not a valid action here") == len(odd)
    assert "'\u00b2' is not a valid action here: nothing happens (the step counts)" in out


def test_generated_look_alikes_are_not_matched_to_an_admissible_action():
    """The generate-mode parser: ASCII case is ignored, a look-alike or a Unicode separator is not."""
    from rspo.core.policies import parse_action

    assert parse_action("LOOK", ["look"]) == ("look", True)
    assert parse_action("<action>Go To  Fridge 1.</action>", ["go to fridge 1"]) == ("go to fridge 1", True)
    for bad in ("loo\u212a", "cl\u0131ck[buy now]", "look\u00a0", "open\x1cchest"):
        action, valid = parse_action(bad, ["look", "click[buy now]", "open chest"])
        assert not valid, bad


def test_detour_applies_the_same_rule():
    import rspo.core.envs

    env = rspo.core.envs.make("detour", split="train")
    env.reset(seed=0)
    good = env.expert_action()
    for bad in (good.replace(" ", "\x1c"), good.replace(" ", "\u00a0"), good.replace("e", "\u0435", 1)):
        assert bad != good
        _, _, _, _, info = env.step(bad)
        assert info["valid"] is False, bad
    _, _, _, _, info = env.step(good.upper())
    assert info["valid"] is True
