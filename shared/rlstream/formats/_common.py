"""Helpers shared by every parser and emitter.

Kept tiny and dependency-free so the per-record hot path stays cheap: no regexes compiled per
call, orjson for every (de)serialisation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import orjson
from pydantic import JsonValue

from rlstream import limits
from rlstream.errors import SchemaViolation

#: top-level keys every parser understands the same way (emitters write them back)
COMMON_KEYS = frozenset(
    {
        "outcome",
        "label",
        "metadata",
        "agent",
        "agent_version",
        "policy_version",
        "model",
        "started_at",
        "ended_at",
    }
)

#: top-level keys that are a logged outcome even when a source writes them outside "outcome"
OUTCOME_KEYS = frozenset({"reward", "resolved", "csat", "success", "score", "task_reward"})

#: conversation-id keys, most specific first
ID_KEYS: tuple[str, ...] = ("conversation_id", "conv_id", "id", "session_id", "thread_id", "uuid")


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def dumps_sorted(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)


def content_hash(record: Any) -> str:
    """Stable id for a record that carries none: same content, same id, across runs."""
    return "sha-" + hashlib.blake2b(dumps_sorted(record), digest_size=12).hexdigest()


def loads_maybe(value: Any) -> Any:
    """Decode a JSON string (tool arguments); the value unchanged when it is not JSON text
    or nests deeper than :data:`rlstream.limits.MAX_DEPTH` (then it stays a string)."""
    return limits.loads_maybe(value)


def parse_ts(value: Any) -> datetime | None:
    """ISO strings, epoch seconds / ms / ns; None when unparseable (caller keeps the raw)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        return value
    if isinstance(value, int | float):
        v = float(value)
        if v > 1e17:
            v /= 1e9
        elif v > 1e14:
            v /= 1e6
        elif v > 1e11:
            v /= 1e3
        try:
            return datetime.fromtimestamp(v, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value and value[0].isdigit():
        s = value.strip()
        if s.endswith("Z"):
            s = s[:-1] + "+00:00"
        try:
            return datetime.fromisoformat(s)
        except ValueError:
            if s.replace(".", "", 1).isdigit():
                return parse_ts(float(s))
            return None
    return None


def ts_out(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def as_text(value: Any) -> str | None:
    """Tool results and odd contents as text; non-strings become compact JSON."""
    if value is None or isinstance(value, str):
        return value
    return dumps(value)


_PLAIN = frozenset({str, int, float, bool, type(None)})
#: anything orjson would write in its own way (subclasses, datetimes, dataclasses) makes it
#: raise instead, so the Python walk below decides those
_STRICT = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME
_STRICT |= orjson.OPT_PASSTHROUGH_DATACLASS


def jsonable(value: Any) -> JsonValue:
    """Coerce to plain JSON (tuples to lists, odd scalars to str) so pydantic accepts it.

    Always a fresh copy of containers. Plain JSON (what ``orjson.loads`` gives, i.e. every
    record off the wire) is copied by an orjson round trip, faster than walking it in Python
    (bench/README.md); the walk remains for anything else (non-string keys, datetimes, subclasses).
    """
    t = type(value)
    if t in _PLAIN:
        return value  # type: ignore[no-any-return]
    if t is dict or t is list:
        try:
            return orjson.loads(orjson.dumps(value, option=_STRICT))  # type: ignore[no-any-return]
        except (TypeError, orjson.JSONEncodeError):
            pass
    return _jsonable_slow(value)


def _jsonable_slow(value: Any) -> JsonValue:
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable_slow(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable_slow(v) for v in value]
    return str(value)


def str_keys(d: Mapping[Any, Any]) -> bool:
    """Every key a string (pydantic's ``dict[str, ...]`` check, for ``model_construct``)."""
    return all(type(k) is str for k in d)


def require_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise SchemaViolation(f"{what} must be a list, got {type(value).__name__}")
    return value


def require_dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SchemaViolation(f"{what} must be an object, got {type(value).__name__}")
    return value


def leftover(d: Mapping[str, Any], known: Iterable[str]) -> dict[str, JsonValue]:
    known_set = known if isinstance(known, frozenset | set) else set(known)
    return {k: jsonable(v) for k, v in d.items() if k not in known_set}


def get_path(record: Any, path: str) -> Any:
    """Value at a dotted path ("meta.conv_id", "runs.0.id"); None when any hop is missing.

    Keys that themselves contain dots (OpenTelemetry attribute names such as
    ``attributes.gen_ai.conversation.id``) are matched greedily, longest key first.
    """
    return _walk(record, path.split("."))


def _walk(cur: Any, parts: list[str]) -> Any:
    if not parts:
        return cur
    if isinstance(cur, Mapping):
        for n in range(len(parts), 0, -1):
            key = ".".join(parts[:n])
            if key in cur:
                found = _walk(cur[key], parts[n:])
                if found is not None:
                    return found
        return None
    if isinstance(cur, list) and parts[0].lstrip("-").isdigit():
        idx = int(parts[0])
        if -len(cur) <= idx < len(cur):
            return _walk(cur[idx], parts[1:])
    return None


# --- tool definitions: canonical shape is {"name", "description", "parameters", ...} -------


def tool_from_openai(tool: Any) -> dict[str, JsonValue]:
    if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
        out = dict(tool["function"])
        rest = {k: v for k, v in tool.items() if k != "function"}
        if rest.get("type") == "function":
            rest.pop("type")
        if rest:
            out["x_openai"] = rest
        return jsonable(out)  # type: ignore[return-value]
    return tool_from_anthropic(tool)


def tool_from_anthropic(tool: Any) -> dict[str, JsonValue]:
    if not isinstance(tool, dict):
        return {"name": str(tool)}
    out = dict(tool)
    if "input_schema" in out and "parameters" not in out:
        out["parameters"] = out.pop("input_schema")
    return jsonable(out)  # type: ignore[return-value]


def tool_to_openai(tool: Mapping[str, JsonValue]) -> dict[str, Any]:
    fn = {k: v for k, v in tool.items() if k != "x_openai"}
    out: dict[str, Any] = {"type": "function", "function": fn}
    rest = tool.get("x_openai")
    if isinstance(rest, dict):
        out.update(rest)
    return out


def tool_to_anthropic(tool: Mapping[str, JsonValue]) -> dict[str, Any]:
    if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
        # A tool kept in OpenAI's wrapped shape: unwrap it, or the record mixes both APIs.
        tool = tool_from_openai(dict(tool))
    out = {k: v for k, v in tool.items() if k != "x_openai"}
    if "parameters" in out:
        out["input_schema"] = out.pop("parameters")
    return out
