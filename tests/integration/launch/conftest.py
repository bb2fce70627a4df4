"""Fixtures for the launcher tests: a real curated dataset, a migrated database."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from rlstream.storage import Store, upgrade

BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def demo_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataset `rlstream demo --quick` curates (sample logs -> ingest -> grade -> curate)."""
    root = tmp_path_factory.mktemp("demo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLSTREAM_")}
    subprocess.run(
        [str(BIN / "rlstream"), "demo", "--quick", "--dir", str(root)],
        check=True,
        capture_output=True,
        env=env,
        timeout=180,
    )
    return root / "out" / "dataset"


@pytest.fixture
async def migrated_dsn(postgres_dsn_factory: Callable[[], str]) -> str:
    dsn = postgres_dsn_factory()
    await upgrade(dsn)
    return dsn


@pytest.fixture
async def store(migrated_dsn: str) -> AsyncIterator[Store]:
    s = await Store.connect(migrated_dsn, max_size=4)
    try:
        yield s
    finally:
        await s.close()
