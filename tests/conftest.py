"""Shared pytest fixtures."""

from __future__ import annotations

import pytest
import torch
from household_worlds import SPLITS

from rspo.envs.household import HouseholdEnv


@pytest.fixture(scope="module")
def envs():
    """One household environment per split."""
    return {split: HouseholdEnv(split=split) for split in SPLITS}


@pytest.fixture
def one_thread():
    """Torch on one thread for the test (training tests: steadier and faster on a busy 2-core CPU)."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture
def first_copy_succeeds(monkeypatch):
    """An untrained model never succeeds in 4 steps, so every group would be without signal:
    pretend the first copy of every task succeeded at its last turn (a synthetic outcome)."""
    from tiny_fixtures import with_successes

    import rspo.rewards

    for name in ("outcome", "dense"):
        monkeypatch.setitem(rspo.rewards.REWARD_MODES, name, with_successes(rspo.rewards.REWARD_MODES[name]))
