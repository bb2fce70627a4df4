"""JSON logs with conversation and correlation ids carried by context variables.

Why context variables: a handler binds the ids once per record or batch, and every log
line below it (library code included) carries them without threading a logger through.
With tracing on, a line written while a span is current also carries ``trace_id`` and
``span_id`` (hex, as trace back ends show them).
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from rlstream.observability.tracing import log_ids

_conversation_id: ContextVar[str | None] = ContextVar("conversation_id", default=None)
_correlation_id: ContextVar[str | None] = ContextVar("correlation_id", default=None)
_service: ContextVar[str | None] = ContextVar("service", default=None)

_STD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


@contextlib.contextmanager
def bound(
    *, conversation_id: str | None = None, correlation_id: str | None = None
) -> Iterator[None]:
    """Bind ids for the duration of a block."""
    tokens = []
    if conversation_id is not None:
        tokens.append((_conversation_id, _conversation_id.set(conversation_id)))
    if correlation_id is not None:
        tokens.append((_correlation_id, _correlation_id.set(correlation_id)))
    try:
        yield
    finally:
        for var, tok in reversed(tokens):
            var.reset(tok)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg, ids, and any ``extra=`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, var in (
            ("service", _service),
            ("conversation_id", _conversation_id),
            ("correlation_id", _correlation_id),
        ):
            value = var.get()
            if value is not None:
                out[key] = value
        ids = log_ids()
        if ids is not None:
            out["trace_id"], out["span_id"] = ids
        for key, value in vars(record).items():
            if key not in _STD and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure_logging(service: str, level: str = "INFO", json_lines: bool = True) -> None:
    """Route the root logger to stderr, JSON by default. Idempotent."""
    _service.set(service)
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_rlstream", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler._rlstream = True  # type: ignore[attr-defined]
    handler.setFormatter(
        JsonFormatter() if json_lines else logging.Formatter("%(levelname)s %(name)s %(message)s")
    )
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.getLogger("aiokafka").setLevel(max(logging.WARNING, root.level))
