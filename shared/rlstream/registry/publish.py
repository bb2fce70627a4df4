"""Where registry events go: a Kafka producer, or nowhere (embedded, no broker).

Events carry stable ids (evaluation id, promotion id), so publishing is at-least-once and
consumers deduplicate on ``event_id``.
"""

from __future__ import annotations

from typing import Protocol

from aiokafka import AIOKafkaProducer

from rlstream.delivery.kafka_connect import start_or_explain
from rlstream.delivery.outbox import make_producer
from rlstream.errors import ConfigError
from rlstream.events.models import DeploymentEvent, EvaluationEvent
from rlstream.events.topics import DEPLOYMENTS, EVALUATIONS
from rlstream.observability import tracing
from rlstream.registry.errors import RegistryError
from rlstream.settings import Settings


class EventSink(Protocol):
    async def send(self, topic: str, key: bytes, value: bytes) -> None:
        """Publish and wait for the broker's ack (raise on failure)."""
        ...


class NullSink:
    """No broker configured: events are not published (the CLI says so)."""

    published = False

    async def send(self, topic: str, key: bytes, value: bytes) -> None:
        return None


class ProducerSink:
    """An already-started aiokafka producer (a service's own, acks=all, idempotent)."""

    published = True

    def __init__(self, producer: AIOKafkaProducer, topic_prefix: str = "") -> None:
        self.producer = producer
        self.topic_prefix = topic_prefix

    async def send(self, topic: str, key: bytes, value: bytes) -> None:
        headers = tracing.inject(()) or None  # the current span's traceparent, if any
        await self.producer.send_and_wait(
            self.topic_prefix + topic, value, key=key, headers=headers
        )


class KafkaSink(ProducerSink):
    """Owns its producer (the CLI): ``async with KafkaSink(settings) as sink``; connects
    with the settings' bootstrap servers and Kafka security."""

    def __init__(
        self, settings: Settings, client_id: str = "rlstream-registry", topic_prefix: str = ""
    ) -> None:
        self.settings = settings
        super().__init__(make_producer(settings, client_id, 8 * 1024 * 1024), topic_prefix)

    async def __aenter__(self) -> KafkaSink:
        try:
            await start_or_explain(self.producer, self.settings)
        except ConfigError as exc:
            raise RegistryError(f"cannot publish registry events: {exc}") from exc
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.producer.stop()


async def publish_evaluation(sink: EventSink, event: EvaluationEvent) -> None:
    await sink.send(EVALUATIONS, (event.run_id or event.evaluation_id).encode(), event.dump_json())


async def publish_deployment(sink: EventSink, event: DeploymentEvent) -> None:
    await sink.send(DEPLOYMENTS, event.agent.encode(), event.dump_json())
