"""``rlstream topics plan|apply``: make the cluster's topics match the topic table.

:func:`diff` is pure (table + what the cluster has -> a :class:`Plan`); the admin shell
around it reads the cluster, and applies a plan. Applying is idempotent: a second apply
finds nothing to do. What Kafka cannot change in place (fewer partitions, another
replication factor) is listed in ``Plan.refused``, never silently skipped.

aiokafka has no IncrementalAlterConfigs, and the classic AlterConfigs *replaces* a topic's
dynamic configs (a key not sent goes back to the broker default), so an alter sends every
dynamic config the topic has, with the table's keys changed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rlstream.errors import RlstreamError
from rlstream.events.topic_table import CONFIG_KEYS, TopicSpec
from rlstream.settings import Settings

#: DescribeConfigs v1+ ``config_source`` of a topic-level (dynamic) override
DYNAMIC_TOPIC_CONFIG = 1


@dataclass(frozen=True)
class LiveTopic:
    """A topic as the cluster has it."""

    name: str
    partitions: int
    replication_factor: int
    #: effective values of the table's config keys
    config: Mapping[str, str]
    #: every topic-level override the broker holds (what an alter must send back)
    dynamic: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Plan:
    """What apply would do, and what it cannot do."""

    create: list[TopicSpec] = field(default_factory=list)
    #: topic -> key -> (current, wanted)
    alter: dict[str, dict[str, tuple[str | None, str]]] = field(default_factory=dict)
    #: topic -> (current, wanted) partition counts
    add_partitions: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: changes Kafka cannot make in place, one sentence each
    refused: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Nothing to create, alter or grow (refused items are not changes)."""
        return not (self.create or self.alter or self.add_partitions)

    def lines(self) -> list[str]:
        out = [
            f"create  {s.name} partitions={s.partitions} rf={s.replication_factor} "
            + " ".join(f"{k}={v}" for k, v in s.config.items())
            for s in self.create
        ]
        for name, keys in self.alter.items():
            changes = ", ".join(f"{k} {old} -> {new}" for k, (old, new) in keys.items())
            out.append(f"alter   {name} {changes}")
        for name, (old, new) in self.add_partitions.items():
            out.append(f"grow    {name} partitions {old} -> {new}")
        out += [f"REFUSED {r}" for r in self.refused]
        return out


def diff(table: Iterable[TopicSpec], live: Mapping[str, LiveTopic]) -> Plan:
    """The plan that makes ``live`` match ``table`` (pure)."""
    plan = Plan()
    for spec in table:
        have = live.get(spec.name)
        if have is None:
            plan.create.append(spec)
            continue
        keys = {
            k: (have.config.get(k), v) for k, v in spec.config.items() if have.config.get(k) != v
        }
        if keys:
            plan.alter[spec.name] = keys
        if spec.partitions > have.partitions:
            plan.add_partitions[spec.name] = (have.partitions, spec.partitions)
        elif spec.partitions < have.partitions:
            plan.refused.append(
                f"{spec.name}: has {have.partitions} partitions, the table says "
                f"{spec.partitions}; Kafka cannot remove partitions (recreate the topic, or "
                "set its partitions in the overrides file)"
            )
        if spec.replication_factor != have.replication_factor:
            plan.refused.append(
                f"{spec.name}: replication factor {have.replication_factor}, the table says "
                f"{spec.replication_factor}; change it with a partition reassignment "
                "(kafka-reassign-partitions), not with apply"
            )
    return plan


def _entries(resource: Any) -> tuple[dict[str, str], dict[str, str]]:
    """(all configs, dynamic topic configs) of one DescribeConfigs resource."""
    values: dict[str, str] = {}
    dynamic: dict[str, str] = {}
    for entry in resource[4]:
        name, value, read_only, source = entry[0], entry[1], entry[2], entry[3]
        if value is None:
            continue
        values[name] = value
        # v0 answers is_default (a bool), v1+ the config source
        is_dynamic = (
            not source and not read_only
            if isinstance(source, bool)
            else source == DYNAMIC_TOPIC_CONFIG
        )
        if is_dynamic and not entry[4]:  # sensitive values come back null: never resend
            dynamic[name] = value
    return values, dynamic


class TopicAdmin:
    """The thin shell: one admin client, read the cluster, apply a plan. The Kafka settings
    give the bootstrap servers and the security options (``kafka_security``)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._admin: Any = None

    async def __aenter__(self) -> TopicAdmin:
        from aiokafka.admin import AIOKafkaAdminClient

        from rlstream.delivery.kafka_connect import start_or_explain
        from rlstream.delivery.kafka_security import client_kwargs

        self._admin = AIOKafkaAdminClient(
            bootstrap_servers=self.settings.kafka_bootstrap,
            client_id="rlstream-topics",
            request_timeout_ms=15_000,
            **client_kwargs(self.settings),
        )
        try:
            await start_or_explain(self._admin, self.settings)
        except BaseException:
            await self._admin.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._admin.close()

    async def live(self, names: Iterable[str]) -> dict[str, LiveTopic]:
        """The named topics the cluster has (absent ones are left out)."""
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        wanted = set(names)
        # all topics: a metadata request naming a topic would auto-create it on some brokers
        meta = {t["topic"]: t for t in await self._admin.describe_topics(None)}
        present = sorted(wanted & set(meta))
        if not present:
            return {}
        resources = [ConfigResource(ConfigResourceType.TOPIC, n) for n in present]
        configs: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
        for resp in await self._admin.describe_configs(resources):
            for res in resp.resources:
                if res[0]:
                    raise TopicsError(f"describe configs of {res[3]}: error {res[0]} {res[1]}")
                configs[res[3]] = _entries(res)
        out = {}
        for name in present:
            parts = meta[name]["partitions"]
            values, dynamic = configs.get(name, ({}, {}))
            out[name] = LiveTopic(
                name,
                len(parts),
                max((len(p["replicas"]) for p in parts), default=0),
                {k: values[k] for k in CONFIG_KEYS if k in values},
                dynamic,
            )
        return out

    async def apply(self, plan: Plan, live: Mapping[str, LiveTopic]) -> None:
        """Create, alter, grow; raises :class:`TopicsError` naming the first topic refused."""
        from aiokafka.admin import NewPartitions, NewTopic
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        if plan.create:
            new = [
                NewTopic(s.name, s.partitions, s.replication_factor, topic_configs=dict(s.config))
                for s in plan.create
            ]
            resp = await self._admin.create_topics(new)
            for err in resp.topic_errors:
                if err[1] not in (0, 36):  # 36: already exists (another apply won the race)
                    raise TopicsError(f"create {err[0]}: error {err[1]} {err[-1]}")
        if plan.alter:
            resources = [
                ConfigResource(
                    ConfigResourceType.TOPIC,
                    name,
                    {**live[name].dynamic, **{k: new for k, (_, new) in keys.items()}},
                )
                for name, keys in plan.alter.items()
            ]
            for resp in await self._admin.alter_configs(resources):
                for res in resp.resources:
                    if res[0]:
                        raise TopicsError(f"alter {res[3]}: error {res[0]} {res[1]}")
        if plan.add_partitions:
            await self._admin.create_partitions(
                {n: NewPartitions(new) for n, (_, new) in plan.add_partitions.items()}
            )
        if plan.create:
            await self._wait_created([s.name for s in plan.create])

    async def _wait_created(self, names: list[str], timeout_s: float = 30.0) -> None:
        """Until the created topics show in metadata with leaders (so a plan sees them)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout_s
        while loop.time() < end:
            meta = {t["topic"]: t for t in await self._admin.describe_topics(None)}
            if all(
                n in meta and all(p["leader"] >= 0 for p in meta[n]["partitions"]) for n in names
            ):
                return
            await asyncio.sleep(0.2)
        raise TopicsError(f"created topics have no leaders after {timeout_s:.0f}s: {names}")


class TopicsError(RlstreamError):
    """The cluster refused a topic change."""

    code = "topics_error"


@contextlib.asynccontextmanager
async def _kafka_errors() -> AsyncIterator[None]:
    """A broker's refusal (policy, authorization, timeout) as one TopicsError line."""
    from aiokafka.errors import KafkaError

    try:
        yield
    except KafkaError as exc:
        raise TopicsError(f"{type(exc).__name__}: {exc}") from exc


async def plan_cluster(settings: Settings, table: list[TopicSpec]) -> Plan:
    """Read the cluster and diff it against ``table``."""
    async with TopicAdmin(settings) as admin, _kafka_errors():
        return diff(table, await admin.live(s.name for s in table))


async def apply_cluster(settings: Settings, table: list[TopicSpec]) -> Plan:
    """Plan and apply in one connection; returns the plan that was applied."""
    async with TopicAdmin(settings) as admin, _kafka_errors():
        live = await admin.live(s.name for s in table)
        plan = diff(table, live)
        await admin.apply(plan, live)
        return plan
