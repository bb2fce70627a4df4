"""Identifiers bounded at ingest, so no oversized key reaches an index or a topic key.

A conversation id, tool-call id, task key or agent longer than ``limits.MAX_ID_BYTES``
becomes a stable digest (:func:`rlstream.limits.bounded_id`); the original lengths are kept
in ``metadata["rlstream_long_ids"]`` (field path -> UTF-8 bytes), so an operator can tell a
digest from a producer's own id and find the producer that sends such ids.
"""

from __future__ import annotations

from typing import Any

from rlstream.events.models import RawTurnDelta
from rlstream.fastmodel import replaced
from rlstream.limits import bounded_id
from rlstream.transcript.model import Message, Transcript

#: where the original lengths of replaced ids are recorded
LONG_IDS_KEY = "rlstream_long_ids"
_FIELDS = ("conversation_id", "task_key", "agent", "model", "agent_version", "policy_version")


def _bounded(value: str | None, path: str, lengths: dict[str, int]) -> str | None:
    if value is None:
        return None
    new = bounded_id(value)
    if new is not value:
        lengths[path] = len(value.encode("utf-8", "surrogatepass"))
    return new


def _message(m: Message, i: int, lengths: dict[str, int]) -> Message:
    upd: dict[str, Any] = {}
    for name in ("tool_call_id", "name"):
        v = getattr(m, name)
        new = _bounded(v, f"messages.{i}.{name}", lengths)
        if new is not v:
            upd[name] = new
    calls = list(m.tool_calls)
    for j, c in enumerate(calls):
        cid = _bounded(c.id, f"messages.{i}.tool_calls.{j}.id", lengths)
        if cid is not c.id:
            calls[j] = replaced(c, {"id": cid})
    if any(a is not b for a, b in zip(calls, m.tool_calls, strict=True)):
        upd["tool_calls"] = tuple(calls)
    return replaced(m, upd) if upd else m


def bound_ids(t: Transcript) -> Transcript:
    """``t`` with every over-long identifier replaced by its digest (``t`` itself if none)."""
    lengths: dict[str, int] = {}
    upd: dict[str, Any] = {}
    for name in _FIELDS:
        v = getattr(t, name)
        new = _bounded(v, name, lengths)
        if new is not v:
            upd[name] = new
    messages = tuple(_message(m, i, lengths) for i, m in enumerate(t.messages))
    if any(a is not b for a, b in zip(messages, t.messages, strict=True)):
        upd["messages"] = messages
    if not upd:
        return t
    upd["metadata"] = {**t.metadata, LONG_IDS_KEY: dict(lengths)}
    return replaced(t, upd)


def bound_delta(d: RawTurnDelta) -> RawTurnDelta:
    """A turn delta keyed by its bounded conversation id (the turn buffers index it)."""
    cid = bounded_id(d.conversation_id)
    return d if cid is d.conversation_id else d.model_copy(update={"conversation_id": cid})
