"""How large a record each output topic accepts, read from the broker at startup.

Why: a producer that only learns the limit from the broker's refusal has already spent an
idempotent sequence number on the refused batch, and every later send to that partition
then fails with OutOfOrderSequenceNumber. Knowing each topic's ``max.message.bytes`` lets
the Outbox refuse an oversized record locally (a deterministic, per-record failure that is
dead-lettered) before anything is sent, and lets dead letters be capped to fit their topic.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from rlstream.delivery.kafka_security import client_kwargs
from rlstream.settings import Settings

log = logging.getLogger("rlstream.delivery")

#: Kafka's default ``message.max.bytes`` (a topic without an override accepts this much)
BROKER_DEFAULT_MAX = 1_048_588
#: record batch + record framing, key and our headers: what a value may not use
FRAMING_BYTES = 16 * 1024


async def topic_limits(settings: Settings, names: Iterable[str]) -> dict[str, int]:
    """topic -> ``max.message.bytes`` (the broker default for a topic it does not report)."""
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    names = list(dict.fromkeys(names))
    out = dict.fromkeys(names, BROKER_DEFAULT_MAX)
    admin = AIOKafkaAdminClient(
        bootstrap_servers=settings.kafka_bootstrap,
        request_timeout_ms=10_000,
        **client_kwargs(settings),
    )
    try:
        await admin.start()
        resources = [ConfigResource(ConfigResourceType.TOPIC, n) for n in names]
        for resp in await admin.describe_configs(resources):
            for res in resp.resources:
                error_code, name, entries = res[0], res[3], res[4]
                if error_code:
                    continue
                for entry in entries:
                    if entry[0] == "max.message.bytes" and entry[1]:
                        out[name] = int(entry[1])
    except Exception:
        log.warning("could not read topic limits; assuming the broker default", exc_info=True)
    finally:
        await admin.close()
    return out


def dlq_payload_cap(dlq_limit: int, configured: int) -> int:
    """Most original bytes a dead letter may carry so it fits its topic (base64: x4/3)."""
    room = max(0, (dlq_limit - FRAMING_BYTES - 8 * 1024) * 3 // 4)
    return max(0, min(configured, room))
