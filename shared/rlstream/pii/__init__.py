"""PII redaction: typed, per-conversation-stable placeholders (``<EMAIL_1>``)."""

from rlstream.pii.detectors import KINDS, Kind, Span, find_spans
from rlstream.pii.redact import Redactor, redact_json, redact_text, redact_transcript

__all__ = [
    "KINDS",
    "Kind",
    "Redactor",
    "Span",
    "find_spans",
    "redact_json",
    "redact_text",
    "redact_transcript",
]
