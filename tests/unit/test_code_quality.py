"""ruff (lint + format) and mypy (strict on the library) stay clean: a regression fails CI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.unit


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_lint_is_clean() -> None:
    res = _run(str(BIN / "ruff"), "check", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_ruff_format_is_clean() -> None:
    res = _run(str(BIN / "ruff"), "format", "--check", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_mypy_strict_library_and_typed_services() -> None:
    res = _run(str(BIN / "mypy"), "shared", "services")
    assert res.returncode == 0, res.stdout + res.stderr


def test_test_module_basenames_are_unique() -> None:
    """pytest imports test modules by basename (rootdir-relative, no packages): a second
    ``test_x.py`` anywhere under tests/ stops the whole collection, so no test runs."""
    from collections import Counter

    names = Counter(p.name for p in (ROOT / "tests").rglob("*.py") if p.name != "conftest.py")
    names.pop("__init__.py", None)
    assert [n for n, c in names.items() if c > 1] == []
