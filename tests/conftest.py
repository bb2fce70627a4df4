"""Registers the real-server harness plugin (tools/testkit/rlstream_testkit/plugin.py) for the whole tree."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rlstream.pii import keys

pytest_plugins = ["rlstream_testkit.plugin", "pytester"]


@pytest.fixture(autouse=True)
def _unkeyed_pseudonyms_after_each_test() -> Iterator[None]:
    """The PII key is process-wide (rlstream.pii.keys): a test that starts a Runtime or runs
    the CLI with a key must not change the stand-ins later tests expect."""
    yield
    keys.configure(None)
