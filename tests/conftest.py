"""Shared pytest fixtures."""

from __future__ import annotations

import pytest
from household_worlds import SPLITS

from rspo.envs.household import HouseholdEnv


@pytest.fixture(scope="module")
def envs():
    """One household environment per split."""
    return {split: HouseholdEnv(split=split) for split in SPLITS}
