"""The pure topic diff: create, alter old -> new, grow, and what Kafka cannot change."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from rlstream.delivery.topics import LiveTopic, _entries, diff
from rlstream.events.topic_table import TopicSpec, render_json, resolve_table

pytestmark = pytest.mark.unit

CFG = {"retention.ms": "100", "cleanup.policy": "delete"}


def _spec(name: str = "t", parts: int = 3, rf: int = 3, **cfg: str) -> TopicSpec:
    return TopicSpec(name, parts, rf, {**CFG, **cfg})


def _live(name: str = "t", parts: int = 3, rf: int = 3, **cfg: str) -> LiveTopic:
    return LiveTopic(name, parts, rf, {**CFG, **cfg})


def test_the_same_cluster_plans_nothing() -> None:
    plan = diff([_spec()], {"t": _live()})
    assert plan.empty and not plan.refused and plan.lines() == []


def test_a_fresh_cluster_plans_every_topic() -> None:
    table = resolve_table()
    plan = diff(table, {})
    assert [s.name for s in plan.create] == [s.name for s in table]
    assert all(line.startswith("create  ") for line in plan.lines())


def test_changed_config_is_an_alter_with_old_and_new() -> None:
    plan = diff([_spec(**{"retention.ms": "50"})], {"t": _live()})
    assert plan.alter == {"t": {"retention.ms": ("100", "50")}}
    assert plan.lines() == ["alter   t retention.ms 100 -> 50"]


def test_more_partitions_grow_fewer_and_another_rf_are_refused() -> None:
    grow = diff([_spec(parts=6)], {"t": _live()})
    assert grow.add_partitions == {"t": (3, 6)} and not grow.refused
    shrink = diff([_spec(parts=1, rf=1)], {"t": _live()})
    assert shrink.empty
    assert len(shrink.refused) == 2
    assert "cannot remove partitions" in shrink.refused[0]
    assert "replication factor 3" in shrink.refused[1]
    assert all(line.startswith("REFUSED ") for line in shrink.lines())


def test_only_dynamic_non_sensitive_configs_are_kept_for_the_alter() -> None:
    # DescribeConfigs v1+: (name, value, read_only, config_source, is_sensitive, synonyms)
    res = (
        0,
        None,
        2,
        "t",
        [
            ("retention.ms", "5", False, 1, False, []),
            ("segment.ms", "9", False, 5, False, []),  # static broker config: not the topic's
            ("sasl.thing", None, False, 1, True, []),
        ],
    )
    values, dynamic = _entries(res)
    assert values == {"retention.ms": "5", "segment.ms": "9"}
    assert dynamic == {"retention.ms": "5"}
    # v0: (name, value, read_only, is_default, is_sensitive)
    _, dyn0 = _entries(
        (0, None, 2, "t", [("a", "1", False, False, False), ("b", "2", False, True, False)])
    )
    assert dyn0 == {"a": "1"}


def test_render_command_prints_the_chart_file() -> None:
    from rlstream.services.cli.main import app

    res = CliRunner().invoke(app, ["topics", "render"])
    assert res.exit_code == 0 and res.stdout == render_json()
    bad = CliRunner().invoke(app, ["topics", "render", "--format", "yaml"])
    assert bad.exit_code != 0
