"""rspo.core.policies.parser: the pure action parser of generate mode (cases, and property tests: it never
raises, and finds a tagged candidate)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rspo.core.policies import parse_action


@pytest.mark.parametrize(
    ("text", "candidates", "expected"),
    [
        ("<action>GO TO Fridge 1.</action>", ["go to fridge 1"], ("go to fridge 1", True)),
        (
            "think...\n<action> take apple 1 from countertop 1 ",
            ["take apple 1 from countertop 1"],
            (
                "take apple 1 from countertop 1",
                True,
            ),
        ),
        ("<action>look</action> then <action>inventory</action>", ["look", "inventory"], ("inventory", True)),
        ("<action>look</action><action></action>", ["look"], ("look", True)),
        ("<action><action>go to desk 1</action></action>", ["go to desk 1"], ("go to desk 1", True)),
        ("<action></action>", ["look"], ("", False)),
        ("   \n\t ", ["look"], ("", False)),
        ("", None, ("", False)),
        ("Action:   Go   to   Sinkbasin 1", ["go to sinkbasin 1"], ("go to sinkbasin 1", True)),
        ("'look'.", None, ("look", True)),
        ("go to fridge 1\nbecause it is cold", None, ("go to fridge 1", True)),
        ("go to fridge 1</action>", ["go to fridge 1"], ("go to fridge 1", True)),
        ("<ACTION>click[Buy Now]</ACTION>", ["click[buy now]"], ("click[buy now]", True)),
        ("<action>search[red shoes]</action>", None, ("search[red shoes]", True)),
        ("<action>walk to the kitchen</action>", ["look"], ("walk to the kitchen", False)),
        (
            "<action>ouvrir le réfrigérateur 1</action>",
            ["ouvrir le réfrigérateur 1"],
            (
                "ouvrir le réfrigérateur 1",
                True,
            ),
        ),
        ("<action>🍎🍎</action>", None, ("", False)),
        ("x" * 1000, None, ("x" * 200, False)),
    ],
)
def test_parse_action_cases(text, candidates, expected):
    assert parse_action(text, candidates) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(), st.one_of(st.none(), st.lists(st.text(max_size=30), max_size=5)))
def test_parse_action_never_raises(text, candidates):
    action, valid = parse_action(text, candidates)
    assert isinstance(action, str) and isinstance(valid, bool) and len(action) <= 200
    if valid and candidates:
        assert action in candidates
    if not action:
        assert not valid


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.from_regex(r"[a-z]{1,8}( [a-z0-9]{1,8}){0,3}", fullmatch=True), min_size=1, max_size=6),
    st.data(),
)
def test_parse_action_finds_the_tagged_candidate(candidates, data):
    chosen = data.draw(st.sampled_from(candidates))
    noise = data.draw(st.text(alphabet="abc \n.<>", max_size=20))
    text = f"{noise}\n<action> {chosen.upper()}. </action>"
    assert parse_action(text, candidates) == (chosen, True)
