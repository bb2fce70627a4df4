"""The canonical, lossless Transcript model every stage shares."""

from rlstream.transcript.model import (
    SCHEMA_VERSION,
    Message,
    Role,
    SourceRef,
    TaskKeyRule,
    ToolCall,
    Transcript,
)

__all__ = [
    "SCHEMA_VERSION",
    "Message",
    "Role",
    "SourceRef",
    "TaskKeyRule",
    "ToolCall",
    "Transcript",
]
