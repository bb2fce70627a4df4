"""Kafka topic names: the public contract with downstream consumers."""

from __future__ import annotations

CONVERSATIONS_RAW = "rlstream.conversations.raw"
TRANSCRIPTS = "rlstream.transcripts.v1"
SCORED = "rlstream.scored.v1"
DATASETS = "rlstream.datasets.v1"
TRAINING = "rlstream.training.v1"
EVALUATIONS = "rlstream.evaluations.v1"
DEPLOYMENTS = "rlstream.deployments.v1"

ALL_TOPICS = (
    CONVERSATIONS_RAW,
    TRANSCRIPTS,
    SCORED,
    DATASETS,
    TRAINING,
    EVALUATIONS,
    DEPLOYMENTS,
)


def dlq(topic: str) -> str:
    """The dead-letter topic for ``topic``."""
    return f"{topic}.dlq"
