"""Fixtures for the verl adapter tests: the OpenRLHF tests' curated maths dataset (a real
GRPO dataset graded by gsm8k) and the pinned verl wheel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.unit.training.openrlhf._helpers_openrlhf import write_maths_dataset

from rlstream.errors import ConfigError
from rlstream.training.openrlhf.wheel import fetch_wheel, pip_command
from rlstream.training.verl.pin import VERL_VERSION
from rlstream_testkit.paths import cache_dir


@pytest.fixture(scope="session")
def verl_maths_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_maths_dataset(tmp_path_factory.mktemp("verl-maths") / "ds")


@pytest.fixture(scope="session")
def verl_wheel() -> Path:
    """``pip download --no-deps verl==<pin>`` (cached); skipped, with the reason, only when
    the package index cannot be reached."""
    try:
        return fetch_wheel(VERL_VERSION, cache_dir() / "verl", dist="verl")
    except ConfigError as exc:
        pytest.skip(f"the package index is unreachable, so the verl wheel is not here: {exc}")


#: verl 0.9.1's config loader (hydra-core pins omegaconf and the antlr4 runtime itself)
HYDRA = ("hydra-core==1.3.2", "omegaconf==2.3.0", "antlr4-python3-runtime==4.9.3")


@pytest.fixture(scope="session")
def hydra_modules() -> None:
    """Hydra importable: from the test extra, else installed from the package index into
    the harness cache (``pip install --no-deps --target``); skipped, with the reason, only
    when neither is possible."""
    try:
        import hydra  # noqa: F401

        return
    except ImportError:
        pass
    target = cache_dir() / "verl-hydra"
    if not (target / "hydra").is_dir():
        cmd = [*pip_command(), "install", "--no-deps", "--target", str(target), *HYDRA]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
            pytest.skip(f"hydra-core is not installed and the index is unreachable: {tail}")
    sys.path.insert(0, str(target))
