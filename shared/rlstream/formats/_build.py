"""Assemble a Transcript from the parts a format parser found, keeping everything else.

Every parser hands over the keys it consumed; whatever the record had beyond those lands in
``metadata`` (record level) so nothing the source carried is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import JsonValue, ValidationError

from rlstream.errors import SchemaViolation
from rlstream.fastmodel import replaced, trusted
from rlstream.formats._common import (
    COMMON_KEYS,
    ID_KEYS,
    OUTCOME_KEYS,
    content_hash,
    jsonable,
    parse_ts,
)
from rlstream.transcript.model import Message, Transcript

_TS_KEYS = ("timestamp", "created_at", "time")


def message_timestamp(raw: Mapping[str, Any], extra: dict[str, JsonValue]) -> Any:
    """Pop the message's timestamp; an unparseable one stays in ``extra`` verbatim."""
    for key in _TS_KEYS:
        if key in raw and raw[key] is not None:
            ts = parse_ts(raw[key])
            if ts is None:
                extra[key] = jsonable(raw[key])
            elif key != "timestamp":
                extra["timestamp_key"] = key
            return ts
    return None


def find_id(record: Mapping[str, Any], keys: Sequence[str] = ID_KEYS) -> tuple[str | None, str]:
    for key in keys:
        value = record.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            return str(value), key
    return None, ""


def build(
    record: Mapping[str, Any],
    *,
    fmt: str,
    messages: Iterable[Message],
    consumed: Iterable[str],
    tools: Iterable[dict[str, JsonValue]] = (),
    conversation_id: str | None = None,
    model: str | None = None,
    started_at: Any = None,
    ended_at: Any = None,
    metadata: Mapping[str, Any] | None = None,
    outcome: Mapping[str, Any] | None = None,
    id_keys: Sequence[str] = ID_KEYS,
) -> Transcript:
    """Common record-level handling: id (or a content hash), outcome, label, versions, times."""
    used = set(consumed) | COMMON_KEYS | OUTCOME_KEYS
    meta: dict[str, JsonValue] = {}
    if conversation_id is None:
        conversation_id, id_key = find_id(record, id_keys)
        if conversation_id is None:
            conversation_id = content_hash(record)
            meta["conversation_id_from"] = "content_hash"
        else:
            used.add(id_key)
    for k, v in record.items():
        if k not in used:
            meta[k] = jsonable(v)
    if metadata:
        meta.update({k: jsonable(v) for k, v in metadata.items()})
    src_meta = record.get("metadata")
    if isinstance(src_meta, Mapping):
        meta.update({str(k): jsonable(v) for k, v in src_meta.items()})
    elif src_meta is not None:
        meta["metadata"] = jsonable(src_meta)

    out: dict[str, JsonValue] = {}
    if outcome:
        out.update({k: jsonable(v) for k, v in outcome.items()})
    src_out = record.get("outcome")
    if isinstance(src_out, Mapping):
        out.update({str(k): jsonable(v) for k, v in src_out.items()})
    elif src_out is not None:
        out["outcome"] = jsonable(src_out)
    for key, value in record.items():  # record order: canonical JSON must be deterministic
        if key in OUTCOME_KEYS:
            out[key] = jsonable(value)

    times: dict[str, Any] = {}
    for key, given, aliases in (
        ("started_at", started_at, ("started_at", "start_time", "created_at")),
        ("ended_at", ended_at, ("ended_at", "end_time")),
    ):
        raw, src = given, key
        if raw is None:
            src = next((a for a in aliases if record.get(a) is not None), key)
            raw = record.get(src)
        ts = parse_ts(raw)
        times[key] = ts
        if ts is None and raw is not None:
            meta[src] = jsonable(raw)
        elif src != key and given is None:
            meta.pop(src, None)

    strs: dict[str, str | None] = {}
    for key in ("agent", "agent_version", "policy_version"):
        value = record.get(key)
        strs[key] = None if value is None else str(value)
    if model is None and record.get("model") is not None:
        model = str(record["model"])
    fields: dict[str, Any] = {
        "conversation_id": conversation_id,
        "messages": tuple(messages),
        "tools": tuple(tools),
        "model": model,
        "outcome": out,
        "label": jsonable(record.get("label")),
        "metadata": meta,
        "format": fmt,
        **strs,
        **times,
    }
    if _checked(fields):
        # every value above is already of its field's type (jsonable copies, parse_ts
        # datetimes, str() ids, validated Message instances): validating again would walk
        # every metadata / tool JSON tree a second time for nothing
        return trusted(Transcript, fields)
    try:
        return Transcript(**fields)
    except ValidationError as exc:
        raise SchemaViolation(f"{fmt}: {exc.errors()[0].get('msg', exc)}") from exc


def _checked(fields: Mapping[str, Any]) -> bool:
    """The cheap checks that stand in for validation on :func:`build`'s own output."""
    return (
        type(fields["conversation_id"]) is str
        and all(type(m) is Message for m in fields["messages"])
        and all(type(t) is dict for t in fields["tools"])
    )


def link_tool_names(messages: list[Message]) -> list[Message]:
    """Give tool results the name of the call they answer when the source left it implicit."""
    names: dict[str, str] = {}
    out: list[Message] = []
    for m in messages:
        for c in m.tool_calls:
            if c.id is not None:
                names[c.id] = c.name
        if m.role == "tool" and m.name is None and m.tool_call_id in names:
            m = replaced(m, {"name": names[m.tool_call_id]})
        out.append(m)
    return out
