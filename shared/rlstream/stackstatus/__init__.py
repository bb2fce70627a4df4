"""What a running local stack is doing, gathered from its own sources (``rlstream status``
and the live view of ``rlstream up``); see docs/status.md."""

from rlstream.stackstatus.collect import StatusCollector
from rlstream.stackstatus.model import StackLike, StatusSnapshot

__all__ = ["StackLike", "StatusCollector", "StatusSnapshot"]
