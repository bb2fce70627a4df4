"""Fixtures for the training tests: the converted small model, kept in the harness cache.

The GGUF -> safetensors conversion takes ~30 s; ``RLSTREAM_MODELS_DIR`` defaults to
``$RLSTREAM_CACHE_DIR/models`` (the harness cache, ``.cache/models`` in a checkout) so a
reused CI machine converts once.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from rlstream_testkit.paths import cache_dir
from rlstream_testkit.plugin import require_all_tiers

os.environ.setdefault("RLSTREAM_MODELS_DIR", str(cache_dir() / "models"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _train_missing() -> str | None:
    for module in ("torch", "transformers", "trl", "peft", "gguf"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed: pip install -e '.[train]'"
    from rlstream.training.basemodel import BaseModelError, gguf_path

    try:
        gguf_path()
    except BaseModelError as exc:
        return str(exc)
    return None


@pytest.fixture(scope="session")
def base_model() -> Path:
    """The converted model; without the train extra: a skip locally, a failure under CI."""
    missing = _train_missing()
    if missing is not None:
        if require_all_tiers():
            pytest.fail(f"train tier unavailable: {missing}", pytrace=False)
        pytest.skip(f"train tier unavailable: {missing}")
    from rlstream.training import ensure_base_model

    return ensure_base_model()


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``rlstream demo --quick``'s folder: sample logs, graded rollouts, the dataset."""
    from typer.testing import CliRunner

    from rlstream.services.cli.main import app

    folder = tmp_path_factory.mktemp("demo")
    result = CliRunner().invoke(app, ["demo", "--quick", "--dir", str(folder)])
    assert result.exit_code == 0, result.output
    return folder


@pytest.fixture(scope="session")
def demo_dataset(demo_dir: Path) -> Path:
    return demo_dir / "out" / "dataset"
