"""Fixtures of the ``rlstream up`` tests (helpers in uphelp.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # uphelp.py
from uphelp import Up, need_servers


@pytest.fixture
def run_up() -> Iterator[Any]:
    made: list[Up] = []

    def start(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> Up:
        need_servers()
        up = Up(data_dir, *args, env=env)
        made.append(up)
        return up

    yield start
    for up in made:
        up.kill()
