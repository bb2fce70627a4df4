"""The topic table covers every topic the code names, and the chart's copy is in sync."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from rlstream.errors import ConfigError
from rlstream.events import topics
from rlstream.events.topic_table import (
    DEFAULT_TABLE,
    TopicSettings,
    render_json,
    resolve_table,
    table_for,
)

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
CODE = [ROOT / "shared" / "rlstream", ROOT / "services" / "rlstream" / "services"]
CHART_FILE = ROOT / "charts" / "rlstream" / "files" / "topics.json"
TOPIC_LITERAL = re.compile(r"^rlstream\.[a-z_]+\.(v\d+|raw)(\.dlq)?$")
#: topic-shaped strings that are not topics (a dataset label format)
NOT_TOPICS = {"rlstream.openrlhf.v1", "rlstream.verl.v1", "rlstream.nemo_rl.v1"}  # label formats


def _topic_const(node: ast.AST) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "topics"
        and node.attr.isupper()
    ):
        value = getattr(topics, node.attr, None)
        return value if isinstance(value, str) else None
    return None


def _names_in_code() -> set[str]:
    """Every topic the code names: topics.X, dlq(topics.X), and topic-shaped literals."""
    found: set[str] = set()
    for top in CODE:
        for path in top.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (name := _topic_const(node)) is not None:
                    found.add(name)
                if isinstance(node, ast.Call) and node.args:
                    fn = node.func
                    fname = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
                    if fname == "dlq" and (inner := _topic_const(node.args[0])) is not None:
                        found.add(topics.dlq(inner))
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and TOPIC_LITERAL.match(node.value)
                ):
                    found.add(node.value)
    return found


def test_every_topic_the_code_names_is_in_the_table() -> None:
    table = {s.name for s in DEFAULT_TABLE}
    code = _names_in_code()
    assert topics.dlq(topics.TRANSCRIPTS) in code  # the scan sees dlq(topics.X)
    assert set(topics.ALL_TOPICS) <= table
    assert code - table - NOT_TOPICS == set()


def test_raw_topic_keeps_conversations_three_days_and_the_rest_longer() -> None:
    by_name = {s.name: s for s in DEFAULT_TABLE}
    raw = int(by_name[topics.CONVERSATIONS_RAW].config["retention.ms"])
    assert raw == 3 * 24 * 3600 * 1000
    assert all(
        int(s.config["retention.ms"]) > raw
        for s in DEFAULT_TABLE
        if s.name != topics.CONVERSATIONS_RAW
    )
    for s in DEFAULT_TABLE:
        assert set(s.config) == {
            "retention.ms",
            "cleanup.policy",
            "min.insync.replicas",
            "max.message.bytes",
        }
        assert s.key and int(s.config["min.insync.replicas"]) < s.replication_factor


def test_committed_chart_file_is_the_rendered_table() -> None:
    assert CHART_FILE.read_text() == render_json(), "run: rlstream topics render --out " + str(
        CHART_FILE.relative_to(ROOT)
    )
    first = json.loads(CHART_FILE.read_text())[0]
    assert set(first) == {"name", "partitions", "replicationFactor", "config"}


def test_overrides_rf_and_prefix_shape_the_deployment_table(tmp_path: Path) -> None:
    f = tmp_path / "over.yaml"
    f.write_text(
        "'*': {partitions: 6}\n"
        "rlstream.conversations.raw: {config: {retention.ms: 86400000}, partitions: 24}\n"
    )
    s = TopicSettings(topic_prefix="t1-", topics_replication_factor=1, topics_overrides_file=f)
    table = {t.name: t for t in table_for(s)}
    raw = table["t1-" + topics.CONVERSATIONS_RAW]
    assert (raw.partitions, raw.replication_factor) == (24, 1)
    assert raw.config["retention.ms"] == "86400000"
    assert raw.config["min.insync.replicas"] == "1"
    assert table["t1-" + topics.SCORED].partitions == 6
    assert len(table) == len(DEFAULT_TABLE)


@pytest.mark.parametrize(
    "over",
    [
        {"rlstream.nope.v1": {"partitions": 1}},
        {"*": {"config": {"segment.ms": "1"}}},
        {"*": {"partitions": 0}},
        {"*": {"replicas": 3}},
    ],
)
def test_a_wrong_override_is_a_config_error(over: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        resolve_table(over)


def test_an_unreadable_overrides_file_names_the_setting(tmp_path: Path) -> None:
    bad = tmp_path / "o.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="RLSTREAM_TOPICS_OVERRIDES_FILE"):
        table_for(TopicSettings(topics_overrides_file=bad))
