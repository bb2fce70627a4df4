"""Fixtures for the service tests: a Stack (unique topic prefix, fresh DB) per test."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rlstream_testkit.stack import Stack

sys.path.insert(0, str(Path(__file__).parent))  # helpers.py, evaluator_stub.py


@pytest.fixture
def make_stack(
    kafka: Any, postgres_dsn_factory: Callable[[], str], redis_url: str, tmp_path: Path
) -> Iterator[Callable[..., Stack]]:
    made: list[Stack] = []

    def make(**env: str) -> Stack:
        st = Stack(
            kafka.bootstrap,
            postgres_dsn_factory(),
            redis_url,
            tmp_path / f"s{len(made)}",
            env={k.upper(): v for k, v in env.items()},
        )
        st.create_topics()
        made.append(st)
        return st

    yield make
    for st in made:
        st.stop_all()
