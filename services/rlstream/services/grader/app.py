"""The grader service: ``faststream run rlstream.services.grader.app:app``.

Consumes ``rlstream.transcripts.v1``, grades each transcript with its agent's reward spec,
stores the rollout and publishes it to ``rlstream.scored.v1`` keyed by task key.
"""

from __future__ import annotations

from faststream.kafka import KafkaMessage

from rlstream.delivery.runtime import (
    Runtime,
    documented_batch,
    kafka_app,
    raw_values,
    subscriber_kwargs,
)
from rlstream.events import DLQRecord, ScoredEvent, topics
from rlstream.grading import RewardSpec, SpecResolver
from rlstream.services.grader.handler import GraderHandler
from rlstream.services.grader.settings import GraderSettings
from rlstream.transcript import Transcript

SERVICE = "grader"
settings = GraderSettings()
rt = Runtime(SERVICE, settings, (topics.SCORED, topics.dlq(topics.TRANSCRIPTS)))
broker, app = kafka_app(
    SERVICE, settings, "Canonical transcripts -> graded rollouts (per-agent reward specs)."
)
_state: dict[str, GraderHandler] = {}

scored_out = broker.publisher(
    rt.topic(topics.SCORED),
    schema=ScoredEvent,
    title="scored",
    description="ScoredRollout: transcript, every reward result, combined score. Key: task key.",
)
dlq_out = broker.publisher(
    rt.topic(topics.dlq(topics.TRANSCRIPTS)),
    schema=DLQRecord,
    title="transcripts-dlq",
    description="Transcript that could not be graded, with the reason. Key: as received.",
)


@broker.subscriber(  # type: ignore[untyped-decorator]
    rt.topic(topics.TRANSCRIPTS),
    decoder=raw_values,
    title="transcripts",
    description="Canonical Transcript. Key: conversation id.",
    **subscriber_kwargs(settings, SERVICE),
)
async def on_transcripts(body: documented_batch(Transcript), msg: KafkaMessage) -> None:  # type: ignore[valid-type]
    await rt.runner.run(msg, _state["handler"].handle)


@app.on_startup
async def _start() -> None:
    from rlstream.rewards.config import load_reward_config

    await rt.start()
    if settings.reward_config:
        specs = SpecResolver(config=load_reward_config(settings.reward_config))
    else:  # one spec for every agent: a bad one stops the service here, not each record
        specs = SpecResolver(single=RewardSpec.parse(settings.reward_spec))
    _state["handler"] = GraderHandler(rt, specs)


@app.after_startup
async def _ready() -> None:
    rt.health.set_ready(True)


@app.after_shutdown
async def _closed() -> None:
    await rt.stop()
