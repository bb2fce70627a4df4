"""The grader service: ``faststream run rlstream.services.grader.app:app``.

Consumes ``rlstream.transcripts.v1``, grades each transcript with its agent's reward spec,
stores the rollout and publishes it to ``rlstream.scored.v1`` keyed by task key.
"""

from __future__ import annotations

from rlstream.delivery.service import StreamService, Topic
from rlstream.events import DLQRecord, ScoredEvent, topics
from rlstream.grading import RewardSpec, SpecResolver
from rlstream.services.grader.handler import GraderHandler
from rlstream.services.grader.settings import GraderSettings
from rlstream.settings import startup_settings
from rlstream.transcript import Transcript

SERVICE = "grader"
settings = startup_settings(GraderSettings)
service = StreamService(
    SERVICE,
    settings,
    "Canonical transcripts -> graded rollouts (per-agent reward specs).",
    source=Topic(
        topics.TRANSCRIPTS, Transcript, "transcripts", "Canonical Transcript. Key: conversation id."
    ),
    outputs=(
        Topic(
            topics.SCORED,
            ScoredEvent,
            "scored",
            "ScoredRollout: transcript, every reward result, combined score. Key: task key.",
        ),
        Topic(
            topics.dlq(topics.TRANSCRIPTS),
            DLQRecord,
            "transcripts-dlq",
            "Transcript that could not be graded, with the reason. Key: as received.",
        ),
    ),
    sized=(topics.SCORED, topics.dlq(topics.TRANSCRIPTS)),
)
rt, broker, app = service.rt, service.broker, service.app


@app.on_startup
async def _start() -> None:
    from rlstream.rewards.config import load_reward_config

    await rt.start()
    if settings.reward_config:
        specs = SpecResolver(config=load_reward_config(settings.reward_config))
    else:  # one spec for every agent: a bad one stops the service here, not each record
        specs = SpecResolver(single=RewardSpec.parse(settings.reward_spec))
    service.handler = GraderHandler(rt, specs).handle
