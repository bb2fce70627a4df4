"""Fixtures for the OpenRLHF adapter tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from _helpers_openrlhf import write_maths_dataset


@pytest.fixture(scope="session")
def maths_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_maths_dataset(tmp_path_factory.mktemp("maths") / "ds")
