"""Fetch a pinned release's wheel (source only: ``--no-deps``, never installed): OpenRLHF's,
and verl's (``dist="verl"``, rlstream.training.verl).

Used to (re)generate the flag manifest and by the test that proves the committed manifest
is what the real release defines. The wheel (~200 KB) is cached (:func:`cache_dir`)
so warm runs do not download it again.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rlstream.errors import ConfigError
from rlstream.training.openrlhf.pin import OPENRLHF_VERSION

#: the release's wheels are per-CPython but carry identical pure-Python sources
WHEEL_PYTHON = "3.11"
WHEEL_PLATFORM = "manylinux1_x86_64"


def cache_dir(dist: str = "openrlhf") -> Path:
    """``$RLSTREAM_CACHE_DIR/<dist>``, else ``$XDG_CACHE_HOME/rlstream/<dist>`` (the
    harness's build cache, outside the clone, so a later clone reuses it)."""
    env = os.environ.get("RLSTREAM_CACHE_DIR")
    if env:
        return Path(env) / dist
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "rlstream" / dist


def pip_command() -> list[str]:
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    for name in ("pip3", "pip"):  # e.g. a uv-made venv without pip
        found = shutil.which(name)
        if found:
            return [found]
    raise ConfigError("pip is needed to download a pinned wheel and none was found")


def download_command(version: str, dest: Path, dist: str = "openrlhf") -> list[str]:
    return [
        *pip_command(),
        "download",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--python-version",
        WHEEL_PYTHON,
        "--platform",
        WHEEL_PLATFORM,
        f"{dist}=={version}",
        "-d",
        str(dest),
    ]


def fetch_wheel(
    version: str = OPENRLHF_VERSION, dest: Path | None = None, dist: str = "openrlhf"
) -> Path:
    """The cached wheel, downloaded once with ``pip download --no-deps``.

    It is downloaded into a fresh folder and moved into the cache in one rename, so a
    concurrent run never sees a partial wheel."""
    where = dest or cache_dir(dist)
    pattern = f"{dist}-{version}-*.whl"
    hits = sorted(where.glob(pattern)) if where.is_dir() else []
    if hits:
        return hits[0]
    where.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=where, prefix=".download-") as tmp:
        done = subprocess.run(
            download_command(version, Path(tmp), dist), capture_output=True, text=True, timeout=600
        )
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
            raise ConfigError(f"pip download {dist}=={version} failed: {' '.join(tail)}")
        got = sorted(Path(tmp).glob(pattern))
        if not got:
            raise ConfigError(f"pip download left no {pattern} in {where}")
        os.replace(got[0], where / got[0].name)
    return where / got[0].name
