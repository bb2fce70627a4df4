"""Event contracts published on Kafka: topic names (:mod:`.topics`) and payload models."""

from rlstream.events import topics
from rlstream.events.lenient import read_event
from rlstream.events.models import (
    EVENT_SCHEMA_VERSION,
    DatasetProfile,
    DatasetReleased,
    DeploymentEvent,
    DLQRecord,
    EvaluationEvent,
    LineageSummary,
    RawTurnDelta,
    ScoredEvent,
    TrainingRunEvent,
    TrainingState,
    TranscriptEvent,
)

__all__ = [
    "EVENT_SCHEMA_VERSION",
    "DLQRecord",
    "DatasetProfile",
    "DatasetReleased",
    "DeploymentEvent",
    "EvaluationEvent",
    "LineageSummary",
    "RawTurnDelta",
    "ScoredEvent",
    "TrainingRunEvent",
    "TrainingState",
    "TranscriptEvent",
    "read_event",
    "topics",
]
