"""rspo.core.records: the plain records rollouts, policies and training pass between them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rspo.core.records import ActionSample, Episode, Turn, TurnInput


def turn(logps=(-0.5, -0.25)):
    return Turn("p", ["a", "b"], "a", 0, [5, 6], list(logps), "s", 0.0, 0.0, True)


def test_log_probs_of_an_action_are_the_sum_over_its_tokens():
    assert turn().logprob == pytest.approx(-0.75)
    assert turn(logps=()).logprob == 0.0
    sample = ActionSample("look", True, [1, 2, 3], [-1.0, -2.0, -0.5])
    assert sample.logprob == pytest.approx(-3.5) and isinstance(sample.logprob, float)


def test_an_episode_starts_empty_and_unshared_as_a_learners_episode():
    a, b = Episode("household", "train/00000", 0, 0), Episode("household", "train/00000", 0, 1)
    a.turns.append(turn())
    assert len(a) == 1 and len(b) == 0  # each episode has its own list of turns
    assert (b.won, b.score, b.progress, b.truncated, b.source) == (False, 0.0, 0.0, False, "learner")
    assert TurnInput("p", None, None).action_ids == []


def test_records_import_nothing_of_the_kit_and_are_re_exported_where_first_defined():
    import rspo.core.policies.base
    import rspo.core.rollout

    assert rspo.core.rollout.Episode is Episode and rspo.core.rollout.Turn is Turn
    assert (
        rspo.core.policies.base.ActionSample is ActionSample
        and rspo.core.policies.base.TurnInput is TurnInput
    )
    code = "import sys, rspo.core.records; print(sorted(m for m in sys.modules if m.startswith('rspo')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['rspo', 'rspo.core', 'rspo.core.records']"
