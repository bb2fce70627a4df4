"""Fixtures for the curation tests (the builders live in rollout_builders.py: a unique module
name, so `from rollout_builders import ...` cannot pick up another directory's conftest)."""

from __future__ import annotations

import pytest
from rollout_builders import group

from rlstream.rollout import ScoredRollout


@pytest.fixture
def mixed_set() -> list[ScoredRollout]:
    """Three in-band groups, one dead all-pass, one dead all-fail, one out of band, a singleton."""
    rows: list[ScoredRollout] = []
    rows += group("alpha", 4, 2)
    rows += group("beta", 4, 1)
    rows += group("gamma", 5, 3)
    rows += group("dead-pass", 4, 4)
    rows += group("dead-fail", 4, 0)
    rows += group("long-shot", 10, 1)  # a name the 10% held-out hash keeps trainable
    rows += group("solo", 1, 1)
    return rows
