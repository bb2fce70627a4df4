"""Custom log shapes described by dotted paths, without code.

A ``FieldMapping`` says where a record keeps its messages, id, task key, outcome and label
(``messages_field: traj``, ``id_field: meta.conv_id``) and how its messages name roles and
content. :func:`apply_mapping` rewrites such a record into a standard one that the format
parsers read; everything the mapping does not consume is kept in ``metadata``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rlstream.errors import ConfigError, SchemaViolation
from rlstream.formats._common import ID_KEYS, get_path

#: role names seen in the wild, mapped to canonical roles (a mapping's role_map wins)
ROLE_SYNONYMS: dict[str, str] = {
    "human": "user",
    "customer": "user",
    "client": "user",
    "gpt": "assistant",
    "bot": "assistant",
    "agent": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "observation": "tool",
    "function": "function",
    "developer": "developer",
}


class FieldMapping(BaseModel):
    """Where a custom record keeps each canonical field (dotted paths, list indexes allowed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages_field: str = "messages"
    id_field: str | None = None
    task_key_field: str | None = None
    outcome_field: str | None = None
    #: string outcome -> score in [0, 1] (e.g. resolved: 1, escalated: 0)
    outcome_values: dict[str, float] = Field(default_factory=dict)
    label_field: str | None = None
    model_field: str | None = None
    agent_field: str | None = None
    system_field: str | None = None
    role_key: str = "role"
    content_key: str = "content"
    role_map: dict[str, str] = Field(default_factory=dict)
    #: format of the message objects after renaming ("auto": detect openai/anthropic/langchain)
    message_format: str = "auto"

    @classmethod
    def from_yaml(cls, path: str | Path) -> FieldMapping:
        try:
            data = yaml.safe_load(Path(path).read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read mapping file {path}: {exc}") from exc
        if isinstance(data, Mapping) and isinstance(data.get("mapping"), Mapping):
            data = data["mapping"]
        try:
            return cls.model_validate(data or {})
        except ValidationError as exc:
            raise ConfigError(f"invalid mapping file {path}: {exc}") from exc


def _without(record: Mapping[str, Any], path: str) -> dict[str, Any]:
    """Shallow copy of ``record`` with the value at ``path`` removed (copies only the spine)."""
    head, _, rest = path.partition(".")
    out = dict(record)
    if head not in out:
        return out
    if not rest:
        del out[head]
    elif isinstance(out[head], Mapping):
        out[head] = _without(out[head], rest)
        if not out[head]:
            del out[head]
    return out


def _rename(msg: Any, m: FieldMapping) -> Any:
    if not isinstance(msg, Mapping):
        return msg
    if m.role_key == "role" and m.content_key == "content" and not m.role_map:
        role = msg.get("role")
        if isinstance(role, str) and role.lower() in ROLE_SYNONYMS:
            return {**msg, "role": ROLE_SYNONYMS[role.lower()], "original_role": role}
        return msg
    out = {k: v for k, v in msg.items() if k not in (m.role_key, m.content_key)}
    role = msg.get(m.role_key)
    if isinstance(role, str):
        mapped = m.role_map.get(role) or ROLE_SYNONYMS.get(role.lower()) or role
        if mapped != role:
            out["original_role"] = role
        role = mapped
    out["role"] = role
    if m.content_key in msg:
        out["content"] = msg[m.content_key]
    return out


def mapped_outcome(m: FieldMapping, value: Any) -> Any:
    """The outcome a mapped field holds, whatever its name: ``{<field>: raw, "value": v}``.

    ``value`` is what the outcome reward reads when no standard key (resolved, csat, reward
    ...) is present: booleans and numbers as they are, strings through ``outcome_values``
    (e.g. ``{"resolved": 1, "escalated": 0}``; case-insensitive). An object is kept as is.
    """
    if isinstance(value, Mapping):
        return value
    leaf = m.outcome_field.rsplit(".", 1)[-1] if m.outcome_field else "outcome"
    mapped = value
    if isinstance(value, str) and m.outcome_values:
        table = {k.strip().lower(): v for k, v in m.outcome_values.items()}
        key = value.strip().lower()
        if key not in table:
            raise SchemaViolation(
                f"mapping: outcome {value!r} at {m.outcome_field!r} is not in the value map "
                f"({', '.join(sorted(m.outcome_values))})"
            )
        mapped = table[key]
    return {leaf: value, "value": mapped}


def apply_mapping(record: Mapping[str, Any], m: FieldMapping) -> dict[str, Any]:
    """Rewrite a custom record into ``{"messages", "id", "outcome", "label", "metadata"...}``."""
    messages = get_path(record, m.messages_field)
    if not isinstance(messages, list):
        raise SchemaViolation(f"mapping: no message list at {m.messages_field!r}")
    rest = _without(record, m.messages_field)
    out: dict[str, Any]
    if m.message_format == "sharegpt":
        out = {"conversations": list(messages)}  # ShareGPT turns keep their own from/value
    else:
        out = {"messages": [_rename(x, m) for x in messages]}
    if m.system_field:
        system = get_path(record, m.system_field)
        if isinstance(system, str):
            if "messages" in out:
                out["messages"].insert(0, {"role": "system", "content": system})
            else:
                out["system"] = system
            rest = _without(rest, m.system_field)
    if m.id_field:
        cid = get_path(record, m.id_field)
        if cid is None:
            raise SchemaViolation(f"mapping: no id at {m.id_field!r}")
        out["id"] = cid
    else:  # the record's own id, as every format parser would find it
        cid = next((record[k] for k in ID_KEYS if isinstance(record.get(k), str | int)), None)
        if cid is not None:
            out["id"] = cid
    for field, key in ((m.label_field, "label"), (m.model_field, "model")):
        if field:
            value = get_path(record, field)
            if value is not None:
                out[key] = value
    if m.agent_field:
        agent = get_path(record, m.agent_field)
        if agent is not None:
            out["agent"] = agent
            rest = _without(rest, m.agent_field)
    if m.outcome_field:
        value = get_path(record, m.outcome_field)
        if value is not None:
            out["outcome"] = mapped_outcome(m, value)
    meta = rest.pop("metadata", None)
    out["metadata"] = {
        **rest,
        **(meta if isinstance(meta, Mapping) else {} if meta is None else {"metadata": meta}),
    }
    return out
