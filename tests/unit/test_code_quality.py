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


# Package and model hosts, spelled in pieces so this file does not name them itself.
_HOSTS = [
    ".".join(parts)
    for parts in (
        ("pypi", "org"),
        ("files", "pythonhosted", "org"),
        ("proxy", "golang", "org"),
        ("sum", "golang", "org"),
        ("repo1", "maven", "org"),
        ("repo", "maven", "apache", "org"),
        ("deb", "debian", "org"),
        ("security", "debian", "org"),
        ("download", "pytorch", "org"),
        ("huggingface", "co"),
        ("registry", "npmjs", "org"),
        ("static", "crates", "io"),
        ("dl", "google", "com"),
        ("registry", "k8s", "io"),
    )
]


def test_no_package_host_is_named_in_the_repo() -> None:
    """Every download goes through its client's configured default (pip, mvn, GOPROXY, the
    machine's apt sources), so a mirror or a proxy set by the user is always honoured."""
    files = _run("git", "ls-files", "-z").stdout.split("\0")
    hits = []
    for name in filter(None, files):
        path = ROOT / name
        if name.startswith("tests/golden/") or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8").lower()
        except (UnicodeDecodeError, OSError):
            continue
        hits += [f"{name}: {h}" for h in _HOSTS if h in text]
    assert hits == []
