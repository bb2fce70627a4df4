"""Logs, metrics and health endpoints shared by every service."""

from rlstream.observability.health import Health
from rlstream.observability.logs import bound, configure_logging

__all__ = ["Health", "bound", "configure_logging"]
