"""Event contracts published on Kafka (models in :mod:`rlstream.events.models`)."""

from rlstream.events import topics

__all__ = ["topics"]
