"""Registers the real-server harness plugin (tests/harness/plugin.py) for the whole tree."""

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

pytest_plugins = ["harness.plugin", "pytester"]
