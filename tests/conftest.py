"""Registers the real-server harness plugin (tools/testkit/rlstream_testkit/plugin.py) for the whole tree."""

pytest_plugins = ["rlstream_testkit.plugin", "pytester"]
