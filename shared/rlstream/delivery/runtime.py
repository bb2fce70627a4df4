"""What every streaming service starts and stops: logs, health, Postgres, Redis, producer.

Services differ only in their handler; this keeps their ``app.py`` files thin and makes
the start order explicit: logs -> health (not ready) -> Kafka reachable and authenticated
(else one clear line, /readyz 503, retried with backoff) -> Postgres (migrated) -> Redis ->
producer -> service-specific restore -> ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Annotated, Any, Literal

from aiokafka import AIOKafkaProducer
from faststream import FastStream
from faststream.kafka import KafkaBroker
from faststream.specification import AsyncAPI
from pydantic import BaseModel, Field, WithJsonSchema

from rlstream.delivery.kafka_connect import OneLine, diagnose, wait_for_kafka
from rlstream.delivery.kafka_security import faststream_security
from rlstream.delivery.outbox import make_producer
from rlstream.delivery.runner import BatchRunner
from rlstream.delivery.sizing import dlq_payload_cap, topic_limits
from rlstream.delivery.wire import install_tolerant_fetch, raw_batch_parser
from rlstream.errors import ConfigError
from rlstream.observability.health import Health
from rlstream.observability.logs import configure_logging
from rlstream.observability.tracing import configure_tracing
from rlstream.observability.tracing import shutdown as tracing_shutdown
from rlstream.settings import Settings

log = logging.getLogger("rlstream.runtime")


class ServiceSettings(Settings):
    """Knobs every service shares (env ``RLSTREAM_*``; one pod per service in K8s)."""

    consumer_group: str | None = Field(default=None, description="default: rlstream-<service>")
    batch_max_records: int = 1000
    batch_timeout_ms: int = 20
    max_poll_interval_ms: int = 300_000
    session_timeout_ms: int = 10_000
    auto_offset_reset: str = "earliest"
    health_host: str = "0.0.0.0"
    health_port: int = Field(default=8080, description="-1 disables the HTTP endpoint")
    pg_pool_max: int = 4
    migrate_on_start: bool = Field(
        default=True,
        description="apply pending migrations at start; false (the chart's migration hook "
        "Job runs them) only checks, and a schema behind or newer than the code is refused",
    )
    redis_namespace: str = "rlstream"
    topic_prefix: str = Field(default="", description="prepended to every topic (tenancy, tests)")
    producer_compression: Literal["none", "lz4", "zstd", "gzip", "snappy"] = Field(
        default="none",
        description="output topics' compression (none measured fastest on one host)",
    )
    dlq_payload_max_bytes: int = Field(
        default=256 * 1024,
        description="most bytes of a rejected value kept in its dead letter (then truncated)",
    )
    stall_after_s: float = Field(
        default=60.0, description="/readyz 503 when a partition has waiting records this long"
    )
    unhealthy_after_s: float = Field(
        default=600.0,
        description="/healthz 503 (the platform restarts the pod) when a partition has had "
        "waiting records and no commit this long; the message names partition and offset",
    )
    busy_after_s: float = Field(
        default=15.0, description="/readyz 503 when the event loop has not ticked this long"
    )
    broker_probe_interval_s: float = 5.0
    metric_agents: tuple[str, ...] = Field(
        default=(),
        description="agents that get their own metric label values (JSON list); others "
        'are "other" once metric_agents_auto_max distinct agents were seen',
    )
    metric_agents_auto_max: int = 20
    profile_path: str | None = Field(
        default=None,
        description="cProfile the process; stats go to <path>.<service>.<pid> at shutdown",
    )

    def group_for(self, service: str) -> str:
        return self.consumer_group or f"{self.topic_prefix}rlstream-{service}"


class Runtime:
    """Started in ``on_startup``, stopped in ``on_shutdown`` of each FastStream app."""

    def __init__(
        self, service: str, settings: ServiceSettings, outputs: tuple[str, ...] = ()
    ) -> None:
        self.service = service
        #: contract names of the topics this service publishes to (DLQ included)
        self.outputs = outputs
        self.settings = settings
        self.health = Health()
        self.runner = BatchRunner(service, self.health)
        self.store: Any = None
        self.redis: Any = None
        self.producer: AIOKafkaProducer | None = None
        self.health_port: int | None = None
        self._profiler: Any = None
        self._probe: asyncio.Task[None] | None = None
        self._kafka_line = OneLine(log)
        self.health.busy_after_s = settings.busy_after_s
        self.runner.progress.stall_after_s = settings.stall_after_s
        self.runner.progress.unhealthy_after_s = settings.unhealthy_after_s
        self.health.add_check("progress", self.runner.progress.check)
        self.health.add_live_check("progress", self.runner.progress.check_live)

    def topic(self, name: str) -> str:
        """The physical topic for a contract topic name (adds ``topic_prefix``)."""
        return self.settings.topic_prefix + name

    async def start(self) -> None:
        s = self.settings
        configure_logging(self.service, s.log_level, s.log_json)
        configure_tracing(self.service, s)
        if s.profile_path:  # why: py-spy is not available; the bench needs a per-service profile
            import cProfile

            self._profiler = cProfile.Profile()
            self._profiler.enable()
        if s.health_port >= 0:
            self.health_port = await self.health.start(s.health_host, s.health_port)
        from rlstream.pii.keys import configure_from_settings
        from rlstream.pii.ner import configure_from_settings as configure_ner
        from rlstream.storage import Store, prepare_schema
        from rlstream.storage.embedded import resolve_dsn

        try:  # a missing DSN or PII key fails now, not after Kafka
            dsn = resolve_dsn(s, service=True)
            pseudonyms = configure_from_settings(s, service=True)
            ner_model = configure_ner(s)  # checked now, loaded on first use
        except ConfigError as exc:
            self.refuse_start(exc)
        if pseudonyms is None:
            log.warning("no RLSTREAM_PII_KEY: unkeyed stand-ins for PII (a one-pod demo only)")
        else:
            log.info("stand-ins keyed", extra={"pii_key_id": pseudonyms.key_id})
        if ner_model is not None:
            log.info("names also by a local NER model", extra={"pii_ner": ner_model.kind})
        await wait_for_kafka(
            s,
            lambda line: self.health.set_ready(False, line or "starting"),
            reporter=self._kafka_line,
        )
        # ConfigError: not this code's schema (storage.migrate), an untrusted certificate,
        # a refused password, an unreadable CA file (storage.pgconnect, redisconnect)
        try:
            await prepare_schema(dsn, migrate=s.migrate_on_start)
            self.store = await Store.connect(dsn, max_size=s.pg_pool_max)
            if s.redis_url is not None:
                from rlstream.storage import RedisState

                self.redis = RedisState.from_url(
                    s.redis_url.get_secret_value(),
                    namespace=s.redis_namespace,
                    ttl_s=s.redis_idempotency_ttl_s,
                    cafile=s.redis_ssl_cafile,
                )
                if not await self.redis.check():
                    log.warning("redis unreachable at start")
        except ConfigError as exc:
            self.refuse_start(exc)
        self.producer = self._new_producer()
        await self.producer.start()
        self.runner.producer = self.producer
        self.runner.renew_producer = self.renew_producer
        await self.size_outputs(*self.outputs)
        log.info("started", extra={"health_port": self.health_port})

    def refuse_start(self, exc: ConfigError) -> None:
        """Exit 2 with one log line: raised, FastStream would print the startup error as an
        exception-group traceback, and the pod's log must say what to fix."""
        log.error("%s", exc)
        logging.shutdown()
        os._exit(2)

    async def size_outputs(self, *topic_names: str) -> None:
        """Read the output (and DLQ) topics' size limits: records over them are refused
        before sending, and dead letters are capped to fit (see delivery.sizing)."""
        from rlstream.events.topics import dlq

        s = self.settings
        limits = await topic_limits(s, [self.topic(t) for t in topic_names])
        self.runner.limits = limits
        dlq_limits = [v for k, v in limits.items() if k.endswith(dlq(""))]
        if dlq_limits:
            self.runner.dlq_payload_max = dlq_payload_cap(min(dlq_limits), s.dlq_payload_max_bytes)
        log.info("output topic limits", extra={"limits": limits})
        self._probe = asyncio.create_task(self._probe_broker())

    def _new_producer(self) -> AIOKafkaProducer:
        s = self.settings
        return make_producer(
            s,
            f"{s.kafka_client_id}-{self.service}",
            s.max_message_bytes + 65536,
            None if s.producer_compression == "none" else s.producer_compression,
        )

    async def renew_producer(self) -> None:
        """Replace the producer (after it lost its idempotence state): a new producer id
        starts a new sequence, so the partition that refused the old one accepts again."""
        from rlstream.observability.metrics import PRODUCER_RENEWALS

        old = self.producer
        new = self._new_producer()
        await new.start()
        self.producer = self.runner.producer = new
        PRODUCER_RENEWALS.labels(self.service).inc()
        if old is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(old.stop(), 10)

    async def _probe_broker(self) -> None:
        """Keep ``progress.broker_error`` true: /readyz is 503 while no broker answers. The
        reason is :func:`diagnose`'s one line (a rotated password, an expired certificate),
        logged when it changes and at most once a minute."""
        while True:
            prod = self.producer
            if prod is not None:
                try:
                    await asyncio.wait_for(prod.client.fetch_all_metadata(), 10)
                    self.runner.progress.broker_error = None
                    self._kafka_line.clear()
                except Exception as exc:
                    line = await diagnose(self.settings) or f"broker unreachable: {exc!r}"[:300]
                    self.runner.progress.broker_error = line
                    self._kafka_line.report(line)
            await asyncio.sleep(self.settings.broker_probe_interval_s)

    async def stop(self) -> None:
        self.health.set_ready(False, "stopping")
        if self._probe is not None:
            self._probe.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probe
        if self.producer is not None:
            await self.producer.stop()
        if self.redis is not None and hasattr(self.redis, "close"):
            await self.redis.close()
        if self.store is not None:
            await self.store.close()
        await self.health.stop()
        await asyncio.to_thread(tracing_shutdown)  # export the spans still buffered
        if self._profiler is not None:
            import os

            self._profiler.disable()
            self._profiler.dump_stats(f"{self.settings.profile_path}.{self.service}.{os.getpid()}")


def subscriber_kwargs(settings: ServiceSettings, service: str) -> dict[str, Any]:
    """Consumer options shared by every service: manual commits, batches, earliest."""
    from faststream.middlewares import AckPolicy

    return {
        "group_id": settings.group_for(service),
        "batch": True,
        "max_records": settings.batch_max_records,
        "batch_timeout_ms": settings.batch_timeout_ms,
        "ack_policy": AckPolicy.MANUAL,
        "auto_offset_reset": settings.auto_offset_reset,
        "max_poll_interval_ms": settings.max_poll_interval_ms,
        "session_timeout_ms": settings.session_timeout_ms,
        "heartbeat_interval_ms": max(1000, settings.session_timeout_ms // 3),
        "max_partition_fetch_bytes": max(1 << 20, settings.max_message_bytes + 65536),
        # headers stay bytes: FastStream's own parser decodes them and fails the batch
        "parser": raw_batch_parser,
    }


def _inline(schema: Any, defs: dict[str, Any] | None = None) -> Any:
    if defs is None:
        defs = schema.pop("$defs", {}) if isinstance(schema, dict) else {}
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _inline(dict(defs[schema["$ref"].rsplit("/", 1)[-1]]), defs)
        return {k: _inline(v, defs) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_inline(v, defs) for v in schema]
    return schema


def documented_batch(*models: type[BaseModel]) -> Any:
    """A handler body type that documents the wire models in AsyncAPI but validates
    nothing: records are parsed one by one by the handler, so one bad record is
    dead-lettered instead of failing the whole batch in the framework."""
    items = [_inline(m.model_json_schema()) for m in models]
    schema = {"type": "array", "items": items[0] if len(items) == 1 else {"anyOf": items}}
    return Annotated[list[Any], WithJsonSchema(schema)]


def raw_values(msg: Any) -> list[bytes | None]:
    """FastStream decoder: hand the raw values through untouched."""
    raw = msg.raw_message
    return [r.value for r in (raw if isinstance(raw, tuple) else (raw,))]


def kafka_app(
    service: str, settings: ServiceSettings, description: str
) -> tuple[KafkaBroker, FastStream]:
    """The (KafkaBroker, FastStream) pair every service module declares, built one way."""
    logger = logging.getLogger("rlstream.faststream")
    install_tolerant_fetch()
    try:
        security, extra = faststream_security(settings)
    except ConfigError:  # Runtime.start reports it (one line, /readyz 503) and never connects
        security, extra = None, {}
    broker = KafkaBroker(
        settings.kafka_bootstrap,
        client_id=f"{settings.kafka_client_id}-{service}",
        logger=logger,
        log_level=logging.DEBUG,
        security=security,
        **extra,
    )
    spec = AsyncAPI(broker, title=f"rlstream {service}", version="1", description=description)
    return broker, FastStream(broker, logger=logger, specification=spec)
