"""Tool-call extraction and canonicalisation: tool_calling's parser, public because the
evaluation grades a trained model's output with the same reader (``calls_in_text``).

Calls come from two places: native ``Message.tool_calls`` (the canonical model already
normalises OpenAI and Anthropic shapes) and fenced ```json blocks in assistant text, which
agents without native tool support emit. Arguments are canonicalised so ``"5"`` equals
``5`` and key order never matters; a declared tools schema makes the coercion type-aware.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from rlstream import limits
from rlstream.transcript import Transcript

_FENCE_HEAD = re.compile(r"[ \t]*(?:json|tool_call|tool|function)?[ \t]*\n?", re.I)
_NUMERIC = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_ARG_KEYS = ("arguments", "args", "parameters", "params", "input", "kwargs")
_NAME_KEYS = ("name", "tool", "tool_name", "function", "function_name")


@dataclass(slots=True)
class Call:
    """One tool call, canonicalised: ``key`` identifies identical calls (spam detection).

    Not frozen: a frozen dataclass pays ``object.__setattr__`` per field on the hot path;
    nothing mutates a Call after extraction.
    """

    name: str
    args: dict[str, Any]
    key: str
    turn: int  # index among assistant turns
    native: bool


def _loads(raw: str) -> Any:
    value = limits.loads_maybe(raw)
    return None if value is raw else value


def call_from_obj(obj: Any) -> tuple[str, Any] | None:
    """(name, raw arguments) from any common JSON tool-call shape, else None."""
    if not isinstance(obj, dict):
        return None
    fn = obj.get("function")
    if isinstance(fn, dict):  # OpenAI {"type": "function", "function": {...}}
        return call_from_obj(fn)
    name: str | None = None
    for k in _NAME_KEYS:  # the first key holding a string names the call ("" names none)
        v = obj.get(k)
        if isinstance(v, str):
            name = v
            break
    if not name:
        return None
    args: Any = {}
    for k in _ARG_KEYS:
        if k in obj:
            args = obj[k]
            break
    if isinstance(args, str):
        parsed = _loads(args)
        args = parsed if parsed is not None else {"__raw__": args}
    return name, args


def fenced_blocks(text: str) -> list[str]:
    """The bodies of fenced blocks, as ``re.findall`` with the fence regex in
    tests/unit/rewards/test_fast_paths.py gives them, without a regex walking every
    character lazily: the head
    after an opening fence is matched by regex, the closing fence found with ``str.find``.

    Equivalent because the head never contains a backtick, so the first closing fence after
    it is the one the lazy ``(.*?)`` stops at, and an opening without a closing fence means
    no later opening has one either.
    """
    out: list[str] = []
    pos = 0
    head = _FENCE_HEAD.match
    while (start := text.find("```", pos)) >= 0:
        body = head(text, start + 3).end()  # type: ignore[union-attr]  # matches ""
        end = text.find("```", body)
        if end < 0:
            break
        out.append(text[body:end])
        pos = end + 3
    return out


def calls_in_text(text: str) -> list[tuple[str, Any]]:
    """Tool calls written as fenced JSON in assistant text (object, list or tool_calls)."""
    out: list[tuple[str, Any]] = []
    if "```" not in text:
        return out
    for block in fenced_blocks(text):
        data = _loads(block.strip())
        if isinstance(data, dict) and isinstance(data.get("tool_calls"), list):
            data = data["tool_calls"]
        items = data if isinstance(data, list) else [data]
        for item in items:
            found = call_from_obj(item)
            if found:
                out.append(found)
    return out


_NO_TYPES: dict[str, dict[str, str]] = {}


def schema_types(tools: tuple[dict[str, Any], ...]) -> dict[str, dict[str, str]]:
    """tool name -> {argument: JSON-schema type} from OpenAI, Anthropic or plain tool specs.

    Cached by the specs' JSON: an agent sends the same tool list with every conversation.
    Callers must not mutate the returned mapping.
    """
    if not tools:
        return _NO_TYPES
    return _schema_types_of(orjson.dumps(tools))


@lru_cache(maxsize=512)
def _schema_types_of(tools_json: bytes) -> dict[str, dict[str, str]]:
    return _schema_types(tuple(orjson.loads(tools_json)))


def _schema_types(tools: tuple[dict[str, Any], ...]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for spec in tools:
        fn = spec.get("function") if isinstance(spec.get("function"), dict) else spec
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            continue
        params = fn.get("parameters") or fn.get("input_schema") or spec.get("input_schema") or {}
        props = params.get("properties", {}) if isinstance(params, dict) else {}
        types: dict[str, str] = {}
        if isinstance(props, dict):
            for key, prop in props.items():
                t = prop.get("type") if isinstance(prop, dict) else None
                if isinstance(t, list):
                    t = next((x for x in t if x != "null"), None)
                if isinstance(t, str):
                    types[key] = t
        out[fn["name"]] = types
    return out


def declared_names(tools: tuple[dict[str, Any], ...]) -> frozenset[str]:
    return frozenset(schema_types(tools))


def canon(value: Any, typ: str | None = None) -> Any:
    """Type-normalised value: numbers become floats, numeric strings numbers, strings trimmed
    and case-folded; with a schema type, coercion follows the declared type instead."""
    tv = type(value)  # exact-type fast paths first: JSON gives plain str/float/int
    if tv is str:
        return _canon_str(value, typ)
    if tv is float or tv is int:
        if typ == "string":
            return _num_text(float(value))
        return round(float(value), 9)
    if isinstance(value, dict):
        return {str(k): canon(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canon(v) for v in value]
    if isinstance(value, bool):
        return value if typ != "string" else str(value).lower()
    if isinstance(value, int | float):
        if typ == "string":
            return _num_text(float(value))
        return round(float(value), 9)
    if isinstance(value, str):
        return _canon_str(value, typ)
    return value


def _canon_str(value: str, typ: str | None) -> Any:
    s = value.strip()
    low = s.casefold()
    if typ == "string":
        return low
    if typ in (None, "boolean") and low in ("true", "false"):
        return low == "true"
    if typ in (None, "number", "integer"):
        digits = s.replace(",", "") if "," in s else s
        # the regex only when the text can start a number (most ids and words cannot)
        if digits and (digits[0] in "+-." or digits[0].isdecimal()) and _NUMERIC.fullmatch(digits):
            return round(float(digits), 9)
    return low


def _num_text(x: float) -> str:
    return str(int(x)) if x.is_integer() else repr(x)


_NO_ARG_TYPES: dict[str, str] = {}


def canon_args(name: str, args: Any, types: dict[str, dict[str, str]]) -> dict[str, Any]:
    if not isinstance(args, dict):
        return {} if args is None else {"__value__": canon(args)}
    t = types.get(name, _NO_ARG_TYPES)
    out: dict[str, Any] = {}
    for k, v in args.items():
        if type(k) is not str:
            k = str(k)
        typ = t.get(k)
        tv = type(v)
        # canon()'s two commonest cases inline (a call per argument is most of the cost)
        if tv is str and typ == "string":
            out[k] = v.strip().casefold()
        elif (tv is float or tv is int) and typ != "string":
            out[k] = round(float(v), 9)
        else:
            out[k] = canon(v, typ)
    return out


_dumps = orjson.dumps
_SORT_KEYS = orjson.OPT_SORT_KEYS


def call_key(name: str, args: dict[str, Any]) -> str:
    return name + "\x00" + orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()


def extract_calls(t: Transcript, types: dict[str, dict[str, str]] | None = None) -> list[Call]:
    """Every call the assistant made, native first within a turn, then fenced JSON."""
    return extract_with_turns(t, schema_types(t.tools) if types is None else types)[0]


def extract_with_turns(t: Transcript, types: dict[str, dict[str, str]]) -> tuple[list[Call], int]:
    """:func:`extract_calls` plus the number of assistant turns (one pass over the messages)."""
    out: list[Call] = []
    turn = -1
    for m in t.messages:
        if m.role != "assistant":
            continue
        turn += 1
        for c in m.tool_calls:
            args = c.arguments
            if args is None and c.raw_arguments:
                args = _loads(c.raw_arguments)
                if args is None:
                    args = {"__raw__": c.raw_arguments}
            name = c.name
            ca = canon_args(name, args, types)
            key = name + "\x00" + _dumps(ca, option=_SORT_KEYS).decode()  # call_key()
            out.append(Call(name, ca, key, turn, True))
        content = m.content
        if content and "```" in content:
            for name, args in calls_in_text(content):
                ca = canon_args(name, args, types)
                key = name + "\x00" + _dumps(ca, option=_SORT_KEYS).decode()
                out.append(Call(name, ca, key, turn, False))
    return out, turn + 1


def is_free_text(value: Any) -> bool:
    """Free prose (a reason, a note) differs between equally good rollouts: never compared
    when a reference is derived from peers."""
    return isinstance(value, str) and (" " in value.strip() or len(value) > 64)
