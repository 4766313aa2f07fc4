"""rspo.core.prompts: the per-step prompt (verl-agent's construction: task, step count, the last H pairs,
memory, current observation, admissible actions; the format line in generate mode)."""

from __future__ import annotations

from rspo.core.envs.registry import ENVS, GENERIC_INTRO
from rspo.core.prompts import GENERATE_SUFFIX, build_prompt


def test_a_first_step_prompt_is_intro_observation_and_admissible_actions():
    text = build_prompt(
        "household",
        "put a mug in the sink.",
        0,
        "You are in the middle of a room.",
        ["look", "go to sinkbasin 1"],
    )
    assert text.split("\n") == [
        ENVS["household"].intro.format(task="put a mug in the sink."),
        "Step 1. Current observation: You are in the middle of a room.",
        "Admissible actions: look | go to sinkbasin 1",
    ]


def test_history_memory_and_step_count_in_order():
    history = [("obs one", "go to fridge 1"), ("obs two", "open fridge 1")]
    text = build_prompt(
        "shop", "buy a lamp", 5, "obs now", ["search[lamp]"], history=history, memory="Visited: fridge 1."
    )
    assert text.split("\n") == [
        ENVS["shop"].intro.format(task="buy a lamp"),
        "You have taken 5 step(s). Your last 2 observation(s) and action(s):",
        "Observation: obs one",
        "Action: go to fridge 1",
        "Observation: obs two",
        "Action: open fridge 1",
        "Visited: fridge 1.",
        "Step 6. Current observation: obs now",
        "Admissible actions: search[lamp]",
    ]


def test_admissible_actions_can_be_left_out_and_an_unknown_env_gets_the_generic_intro():
    text = build_prompt("nowhere", "do it", 0, "o", ["a", "b"], show_admissible=False)
    assert text == GENERIC_INTRO.format(task="do it") + "\nStep 1. Current observation: o"


def test_generate_mode_ends_with_the_format_line_and_an_admissible_example():
    text = build_prompt("household", "t", 0, "o", ["inventory", "look"], action_mode="generate")
    assert text.endswith("\n" + GENERATE_SUFFIX.format(example="inventory"))
    assert "<action>inventory</action>" in text
    assert build_prompt("household", "t", 0, "o", [], action_mode="generate").endswith(
        "<action>look</action>."
    )
    assert "<action>" not in build_prompt(
        "household", "t", 0, "o", ["inventory"]
    )  # score mode: no format line
