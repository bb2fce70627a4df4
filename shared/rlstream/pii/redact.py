"""Replace PII with typed placeholders that are stable within one conversation.

``<EMAIL_1>`` always stands for the same address inside a conversation, so a grader can still
tell "the agent repeated the customer's address" from "it invented another"; numbering
restarts per conversation, so placeholders carry nothing across conversations.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import orjson
from pydantic import JsonValue

from rlstream import limits
from rlstream.errors import NestingTooDeep
from rlstream.fastmodel import replaced
from rlstream.pii import keys
from rlstream.pii.detectors import (
    CONTEXT_KINDS,
    PASSWORD_KEY,
    SECRET_KEY,
    Kind,
    find_spans,
)
from rlstream.pii.validators import luhn_ok
from rlstream.transcript.model import Message, ToolCall, Transcript

_NON_ALNUM = re.compile(r"[^0-9A-Za-z]")
_SCALARS = frozenset({int, float, bool})
#: shorter strings hold no detectable PII (a name can have two letters: {"customer": "Bo"});
#: keyed values ({"pin": "1234"}) are checked before this cut
_MIN_PII_LEN = 2
#: keys whose value is a place: a name-like word in it is the place ("city": "Austin")
_PLACE_KEY = re.compile(r"(?i)(?:^|_)(?:city|town|country|state|region|province|county|location)$")
_PHONE_CHARS = re.compile(r"^\+?[\d\s().-]{7,24}$")
_KEY_HINTS: tuple[tuple[re.Pattern[str], Kind], ...] = (
    (
        re.compile(
            r"(?i)(?:^|_)(?:phone|mobile|tel|telephone|cell|fax|msisdn)(?:_?(?:number|no))?$"
        ),
        "PHONE",
    ),
    (re.compile(r"(?i)(?:^|_)ssn$|social_security"), "SSN"),
    (re.compile(r"(?i)(?:^|_)(?:card|card_number|cc|pan|cc_number)$"), "CARD"),
    (re.compile(r"(?i)^(?:dob|date_?of_?birth|birth_?date|birthday)$"), "DOB"),
    (
        re.compile(
            r"(?i)^(?:(?:home_|billing_|shipping_|street_)?address(?:_?line)?_?[12]?|street|"
            r"line[12]|post_?code|postal_?code|zip|zip_?code)$"
        ),
        "ADDRESS",
    ),
    (
        re.compile(
            r"(?i)^(?:first_?name|last_?name|full_?name|surname|given_?name|family_?name|"
            r"customer_?name|user_?name)$"
        ),
        "NAME",
    ),
)


@lru_cache(maxsize=4096)
def _key_kind(key: str) -> Kind | None:
    """What a JSON key says its string value is (cached: key names repeat endlessly)."""
    if PASSWORD_KEY.match(key):
        return "SECRET"
    if SECRET_KEY.match(key):
        return "API_KEY"
    for pattern, kind in _KEY_HINTS:
        if pattern.search(key):
            return kind
    return None


def _walk_too_deep() -> NestingTooDeep:
    return NestingTooDeep(f"JSON nested deeper than {limits.MAX_DEPTH_CEILING} levels")


def _norm(kind: Kind, value: str) -> str:
    if kind == "EMAIL":
        return value.lower()
    if kind in ("PHONE", "CARD", "SSN", "IBAN"):
        return _NON_ALNUM.sub("", value).upper()
    return value


class Redactor:
    """Redacts the strings of one conversation; keeps the value -> placeholder table."""

    __slots__ = ("_next", "_table", "found")

    def __init__(self) -> None:
        self._table: dict[tuple[str, str], str] = {}
        self._next: Counter[str] = Counter()
        #: replacements made, per kind (every occurrence counts)
        self.found: Counter[str] = Counter()

    def placeholder(self, kind: Kind, value: str) -> str:
        key = (kind, _norm(kind, value))
        ph = self._table.get(key)
        if ph is None:
            self._next[kind] += 1
            ph = f"<{kind}_{self._next[kind]}>"
            self._table[key] = ph
        self.found[kind] += 1
        return ph

    def text(self, s: str, place: bool = False) -> str:
        """``s`` with placeholders; ``place``: the key says the value is a place (``"city":
        "Austin"``), so a name-like word in it is the place, not a person."""
        spans = find_spans(s)
        if place and spans:
            spans = [sp for sp in spans if sp.kind != "NAME"]
        if not spans:
            return s
        out: list[str] = []
        pos = 0
        for sp in spans:
            out.append(s[pos : sp.start])
            out.append(self.placeholder(sp.kind, s[sp.start : sp.end]))
            pos = sp.end
        out.append(s[pos:])
        return "".join(out)

    def _keyed(self, key: str, s: str) -> str | None:
        """A string whose key says what it is (``"password": "..."``, ``"phone": "..."``)."""
        kind = _key_kind(key)
        if kind is None or s.startswith("<"):
            return None
        if kind == "SECRET":
            return self.placeholder(kind, s) if len(s) >= 4 else None
        if kind == "API_KEY":
            return self.placeholder(kind, s) if len(s) >= 8 else None
        if kind in CONTEXT_KINDS:
            return self.placeholder(kind, s) if len(s.strip()) >= 2 else None
        digits = _NON_ALNUM.sub("", s)
        if kind == "PHONE" and _PHONE_CHARS.match(s) and 7 <= len(digits) <= 15:
            return self.placeholder(kind, s)
        if kind == "SSN" and len(digits) == 9 and digits.isdigit():
            return self.placeholder(kind, s)
        if kind == "CARD" and 13 <= len(digits) <= 19 and digits.isdigit() and luhn_ok(digits):
            return self.placeholder(kind, s)
        return None

    def json(self, v: Any) -> Any:
        """:meth:`value` for a top-level JSON value."""
        return self.value(v)

    def value(self, v: Any, key: str | None = None, depth: int = 0) -> Any:
        """Redact every string inside a JSON value (dict keys are left alone).

        Returns ``v`` itself when nothing changed, so callers can skip copies cheaply. Raises
        NestingTooDeep past ``limits.MAX_DEPTH_CEILING`` (what any input may be accepted
        with) instead of recursing into a RecursionError.
        """
        t = type(v)
        if t is str:
            if key is not None and _key_kind(key) is not None:
                hit = self._keyed(key, v)
                if hit is not None:
                    return hit
            if len(v) < _MIN_PII_LEN:
                return v
            return self.text(v, place=key is not None and _PLACE_KEY.search(key) is not None)
        if t is dict or (t is not list and t is not tuple and isinstance(v, Mapping)):
            if depth >= limits.MAX_DEPTH_CEILING:
                raise _walk_too_deep()
            out: dict[str, Any] | None = None
            for k, item in v.items():
                if item is None or type(item) in _SCALARS:
                    if type(item) is int and _key_kind(str(k)) is not None:
                        new = self._keyed(str(k), str(item))  # {"phone": 4155550132}
                        if new is not None:
                            out = dict(v) if out is None else out
                            out[k] = new
                    continue
                new = self.value(item, k if type(k) is str else str(k), depth + 1)
                if new is not item:
                    if out is None:
                        out = dict(v)
                    out[k] = new
            return v if out is None else out
        if t is list or t is tuple:
            if depth >= limits.MAX_DEPTH_CEILING:
                raise _walk_too_deep()
            items: list[Any] | None = None
            for idx, item in enumerate(v):
                if item is None or type(item) in _SCALARS:
                    continue
                new = self.value(item, key, depth + 1)
                if new is not item:
                    if items is None:
                        items = list(v)
                    items[idx] = new
            return v if items is None else items
        return v

    def _call(self, c: ToolCall) -> ToolCall:
        args = self.value(c.arguments)
        raw = c.raw_arguments
        if raw is not None:
            if _decodes_to(raw, c.arguments):
                # the string is the arguments: re-encode the redacted value (keyed hits such as
                # {"pin": ...} included) and skip a second scan; untouched strings stay verbatim
                if args is not c.arguments:
                    raw = orjson.dumps(args).decode()
            else:
                raw = self.text(raw)
        extra = self.json(c.extra)
        if args is c.arguments and raw is c.raw_arguments and extra is c.extra:
            return c
        return replaced(c, {"arguments": args, "raw_arguments": raw, "extra": extra})

    def _json_text(self, s: str) -> str:
        """A tool result that is JSON: redact its values by key and content, keep it JSON."""
        value = limits.loads_maybe(s)
        if value is s:  # not JSON, or nested too deeply to walk: redact it as text
            return self.text(s)
        new = self.value(value)
        return s if new is value else orjson.dumps(new).decode()

    def message(self, m: Message) -> Message:
        content = m.content
        if content:
            structured = m.role == "tool" and content[:1] in ("{", "[")
            content = self._json_text(content) if structured else self.text(content)
        calls = tuple(self._call(c) for c in m.tool_calls)
        extra = self.json(m.extra)
        if (
            content is m.content
            and extra is m.extra
            and all(a is b for a, b in zip(calls, m.tool_calls, strict=True))
        ):
            return m
        return replaced(m, {"content": content, "tool_calls": calls, "extra": extra})


def redact_transcript(t: Transcript, redactor: Redactor | None = None) -> Transcript:
    """Redacted copy of ``t`` (``redacted=True``): text, tool arguments and results, system
    prompt, tool definitions, metadata, outcome and label. Ids and model names stay, except a
    conversation id that itself carries PII (a session keyed by e-mail): that becomes a
    stable hash, so keys, dedupe and lineage still work without the address."""
    r = redactor if redactor is not None else Redactor()
    messages = tuple(r.message(m) for m in t.messages)
    tools = r.json(t.tools)  # one memo lookup for the whole (usually repeated) tool set
    update: dict[str, Any] = {
        "messages": messages,
        "tools": tools if tools is t.tools else tuple(tools),
        "metadata": r.json(t.metadata),
        "outcome": r.json(t.outcome),
        "label": r.json(t.label),
        "redacted": True,
    }
    if find_spans(t.conversation_id):
        update["conversation_id"] = pii_free_id(t.conversation_id)
    return replaced(t, update)


def _decodes_to(raw: str, value: Any) -> bool:
    try:
        return bool(orjson.loads(raw) == value)
    except orjson.JSONDecodeError:
        return False


def pii_free_id(value: str) -> str:
    """A stable stand-in for an identifier that contains PII: keyed with the process's
    PII key when one is configured (``rlstream.pii.keys``), else the unkeyed local form."""
    return keys.stand_in(value)


def redact_text(text: str) -> str:
    """Redact one standalone string (its own placeholder numbering)."""
    return Redactor().text(text)


def redact_json(value: JsonValue) -> JsonValue:
    result: JsonValue = Redactor().value(value)
    return result
