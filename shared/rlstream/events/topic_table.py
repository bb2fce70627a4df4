"""Every Kafka topic rlstream uses, with the settings it must be created with.

One table, read by ``rlstream topics plan|apply`` (:mod:`rlstream.delivery.topics`) and
rendered to ``charts/rlstream/files/topics.json`` for the chart's hook Job or Strimzi
``KafkaTopic`` resources, so the cluster's topics and the code cannot disagree. The names
come from :mod:`rlstream.events.topics`; a unit test fails when a topic the code uses is
missing here.

The raw topic keeps 3 days only: it carries conversations as agents sent them, before PII
redaction, and ingest reads it within seconds. 3 days is enough to ride out an ingest outage
over a weekend; everything downstream is redacted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import Field

from rlstream.errors import ConfigError
from rlstream.events import topics
from rlstream.settings import Settings

DAY_MS = 24 * 3600 * 1000
MIB = 1024 * 1024

#: the keys ``config`` may hold (what plan/apply compare and alter)
CONFIG_KEYS = (
    "retention.ms",
    "cleanup.policy",
    "min.insync.replicas",
    "max.message.bytes",
)


@dataclass(frozen=True)
class TopicSpec:
    """One topic: how it is created and what its records are keyed by."""

    name: str
    partitions: int
    replication_factor: int
    config: Mapping[str, str]
    key: str = field(default="", compare=False)
    purpose: str = field(default="", compare=False)

    def as_json(self) -> dict[str, Any]:
        """The chart's shape: {name, partitions, replicationFactor, config}."""
        return {
            "name": self.name,
            "partitions": self.partitions,
            "replicationFactor": self.replication_factor,
            "config": dict(self.config),
        }


def _cfg(retention_days: int, max_bytes: int) -> dict[str, str]:
    return {
        "retention.ms": str(retention_days * DAY_MS),
        "cleanup.policy": "delete",
        "min.insync.replicas": "2",
        "max.message.bytes": str(max_bytes),
    }


def _spec(name: str, parts: int, days: int, mib: int, key: str, purpose: str) -> TopicSpec:
    return TopicSpec(name, parts, 3, _cfg(days, mib * MIB), key, purpose)


#: topics that a service consumes, so each has a dead-letter topic
CONSUMED = (topics.CONVERSATIONS_RAW, topics.TRANSCRIPTS, topics.SCORED, topics.TRAINING)

#: the table, contract names (no prefix); RF 3 with min.insync.replicas 2 survives one broker
DEFAULT_TABLE: tuple[TopicSpec, ...] = (
    _spec(
        topics.CONVERSATIONS_RAW,
        12,
        3,
        8,
        "conversation id (as the producer sent it)",
        "raw conversations and turn deltas, NOT redacted: short retention",
    ),
    _spec(topics.TRANSCRIPTS, 12, 7, 8, "conversation id", "canonical, PII-redacted transcripts"),
    _spec(topics.SCORED, 12, 7, 8, "task key", "graded rollouts"),
    _spec(topics.DATASETS, 3, 30, 8, "dataset id", "sealed dataset releases"),
    _spec(topics.TRAINING, 3, 30, 8, "run id", "training run state changes"),
    _spec(topics.EVALUATIONS, 3, 30, 8, "run id", "gate decisions"),
    _spec(topics.DEPLOYMENTS, 3, 30, 8, "agent", "alias moves (promote, rollback)"),
    *(
        _spec(
            topics.dlq(t),
            3,
            14,
            2,
            "the source record's key (hashed if it held PII)",
            "dead letters",
        )
        for t in CONSUMED
    ),
)


class TopicSettings(Settings):
    """Per-deployment changes to the table (env ``RLSTREAM_*``)."""

    topic_prefix: str = Field(default="", description="prepended to every topic (tenancy, tests)")
    topics_replication_factor: int | None = Field(
        default=None,
        ge=1,
        description="every topic's replication factor (1 on a one-broker dev cluster); "
        "min.insync.replicas is lowered to at most RF-1 (at least 1) with it",
    )
    topics_overrides_file: Path | None = Field(
        default=None,
        description='JSON or YAML: {"<topic>" or "*": {"partitions": n, '
        '"replicationFactor": n, "config": {"retention.ms": "..."}}}',
    )


def _read_overrides(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"RLSTREAM_TOPICS_OVERRIDES_FILE: cannot read {path}: {exc}") from exc
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text) or {}
        else:
            data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"RLSTREAM_TOPICS_OVERRIDES_FILE: {path} does not parse: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"RLSTREAM_TOPICS_OVERRIDES_FILE: {path} must hold a mapping")
    return data


def _apply_one(spec: TopicSpec, over: Mapping[str, Any], where: str) -> TopicSpec:
    unknown = set(over) - {"partitions", "replicationFactor", "config"}
    if unknown:
        raise ConfigError(f"topic overrides for {where}: unknown keys {sorted(unknown)}")
    config = dict(spec.config)
    for k, v in (over.get("config") or {}).items():
        if k not in CONFIG_KEYS:
            raise ConfigError(f"topic overrides for {where}: {k!r} is not one of {CONFIG_KEYS}")
        config[k] = str(v)
    try:
        parts = int(over.get("partitions", spec.partitions))
        rf = int(over.get("replicationFactor", spec.replication_factor))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"topic overrides for {where}: {exc}") from exc
    if parts < 1 or rf < 1:
        raise ConfigError(f"topic overrides for {where}: partitions and RF must be >= 1")
    return replace(spec, partitions=parts, replication_factor=rf, config=config)


def resolve_table(
    overrides: Mapping[str, Any] | None = None,
    replication_factor: int | None = None,
    prefix: str = "",
    table: tuple[TopicSpec, ...] = DEFAULT_TABLE,
) -> list[TopicSpec]:
    """The table for one deployment: overrides ("*" first, then per topic), RF, prefix."""
    overrides = dict(overrides or {})
    names = {s.name for s in table}
    stray = set(overrides) - names - {"*"}
    if stray:
        raise ConfigError(f"topic overrides name unknown topics: {sorted(stray)}")
    out = []
    for spec in table:
        if replication_factor is not None:
            isr = min(int(spec.config["min.insync.replicas"]), max(1, replication_factor - 1))
            cfg = {**spec.config, "min.insync.replicas": str(isr)}
            spec = replace(spec, replication_factor=replication_factor, config=cfg)
        if "*" in overrides:
            spec = _apply_one(spec, overrides["*"], "*")
        if spec.name in overrides:
            spec = _apply_one(spec, overrides[spec.name], spec.name)
        out.append(replace(spec, name=prefix + spec.name))
    return out


def table_for(settings: TopicSettings) -> list[TopicSpec]:
    """The table as this deployment's settings shape it."""
    over = _read_overrides(settings.topics_overrides_file) if settings.topics_overrides_file else {}
    return resolve_table(over, settings.topics_replication_factor, settings.topic_prefix)


def render_json(table: list[TopicSpec] | None = None) -> str:
    """``charts/rlstream/files/topics.json``: the default table, stable bytes."""
    specs = resolve_table() if table is None else table
    return json.dumps([s.as_json() for s in specs], indent=2) + "\n"
