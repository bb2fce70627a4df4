"""The wiring every consuming service repeats, in one place: :class:`StreamService`.

A service's ``app.py`` says only what is its own: the topic it consumes, the topics it
documents as outputs, its handler and its start/stop extras. The rest is here: the
:class:`~rlstream.delivery.runtime.Runtime`, the broker and FastStream app (AsyncAPI
included), one batch subscriber with manual commits that hands each batch to
``runtime.runner.run``, ready after startup, and the runtime stopped after shutdown.
"""

# no ``from __future__ import annotations``: FastStream reads the subscriber's annotations
# (the documented batch type built per service) as objects
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from faststream.kafka import KafkaMessage

from rlstream.delivery.batch import Rejected
from rlstream.delivery.lag import LagRefresher
from rlstream.delivery.runtime import (
    Runtime,
    ServiceSettings,
    documented_batch,
    kafka_app,
    raw_values,
    subscriber_kwargs,
)

BatchHandler = Callable[[Sequence[Any]], Awaitable[list[Rejected]]]


@dataclass(frozen=True)
class Topic:
    """A topic as the service's AsyncAPI document describes it (contract name, no prefix)."""

    name: str
    schema: Any
    title: str
    description: str


class StreamService:
    """Runtime + broker + app + the one batch subscriber of a consuming service.

    ``handler`` may be set after construction (services that build it on startup, once the
    runtime's stores are open); a batch that arrives before is an error, as before.
    """

    def __init__(
        self,
        name: str,
        settings: ServiceSettings,
        summary: str,
        source: Topic,
        outputs: Sequence[Topic],
        sized: tuple[str, ...] = (),
    ) -> None:
        """``sized``: the output topics whose size limits the runtime reads at start."""
        self.name = name
        self.settings = settings
        self.rt = Runtime(name, settings, sized)
        self.broker, self.app = kafka_app(name, settings, summary)
        self.handler: BatchHandler | None = None
        for out in outputs:
            self.broker.publisher(
                self.rt.topic(out.name),
                schema=out.schema,
                title=out.title,
                description=out.description,
            )
        subscriber = self.broker.subscriber(
            self.rt.topic(source.name),
            decoder=raw_values,
            title=source.title,
            description=source.description,
            **subscriber_kwargs(settings, name),
        )
        batch_type = documented_batch(source.schema)

        async def consume(body: batch_type, msg: KafkaMessage) -> None:  # type: ignore[valid-type]
            await self.rt.runner.run(msg, self._handle)

        subscriber(consume)
        #: the consumer lag gauge, refreshed while no batch arrives (delivery/lag.py)
        self.lag = LagRefresher(
            name, lambda: getattr(subscriber, "consumer", None), settings.broker_probe_interval_s
        )
        self.app.after_startup(self._ready)
        self.app.on_shutdown(self.lag.stop)
        self.app.after_shutdown(self.rt.stop)

    async def _handle(self, records: Sequence[Any]) -> list[Rejected]:
        if self.handler is None:
            raise RuntimeError(f"{self.name}: a batch arrived before the handler was set")
        return await self.handler(records)

    async def _ready(self) -> None:
        self.lag.start()
        self.rt.health.set_ready(True)
