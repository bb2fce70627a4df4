"""Fixtures for the training tests: the converted small model, kept in the harness cache.

The GGUF -> safetensors conversion takes ~30 s; ``RLSTREAM_MODELS_DIR`` defaults to
``$RLSTREAM_CACHE_DIR/models`` (the harness cache, ``.cache/models`` in a checkout) so a
reused CI machine converts once.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.paths import cache_dir

os.environ.setdefault("RLSTREAM_MODELS_DIR", str(cache_dir() / "models"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def base_model() -> Path:
    from rlstream.training import ensure_base_model

    return ensure_base_model()


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``rlstream demo``'s folder: sample logs, graded rollouts, the curated dataset."""
    from typer.testing import CliRunner

    from rlstream.services.cli.main import app

    folder = tmp_path_factory.mktemp("demo")
    result = CliRunner().invoke(app, ["demo", "--dir", str(folder)])
    assert result.exit_code == 0, result.output
    return folder


@pytest.fixture(scope="session")
def demo_dataset(demo_dir: Path) -> Path:
    return demo_dir / "out" / "dataset"
