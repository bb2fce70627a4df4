"""The per-field PII policy for everything that is not message text (see docs/pii.md).

Free text is redacted to placeholders by :class:`rlstream.pii.redact.Redactor`. The fields
here are identifiers and names that systems key on, so each gets the treatment that keeps
it useful:

* **hash** (``pii-<blake2b>``): identifiers other things join or partition on
  (``conversation_id``, tool-call ids, ``agent``, ``model``, ``agent_version``, message
  ``name``, DLQ keys). A value without PII stays as is; one with PII becomes a stable
  hash, so equal inputs still match and nothing readable is left.
* **redact in place** (content): ``label``, ``outcome`` and tool-call ``arguments`` are
  what grading compares and reads (gold answers, reference calls, outcomes), so PII inside
  them becomes placeholders and everything else stays: PII glued into a word
  (``Mary-Kate``, ``kenji@example.jp-1``) becomes a placeholder where it stands, never a
  wholesale stand-in (a hashed gold answer has no number left to grade).
* **redact keys**: dict keys of ``metadata``/``outcome``/``label``/tool arguments are run
  through the same detectors as text (values already are).
* **bounded labels**: Prometheus label values come from an allow-list, else ``other``
  (:func:`rlstream.observability.metrics.label`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import orjson

from rlstream import limits
from rlstream.errors import InputError, NestingTooDeep
from rlstream.fastmodel import replaced
from rlstream.pii.detectors import Span, find_spans
from rlstream.pii.redact import Redactor, pii_free_id
from rlstream.transcript.model import Message, ToolCall, Transcript

#: how much of a non-JSON payload is scanned and kept (the DLQ caps it again)
_TEXT_MAX = 4 << 20


_SEP = re.compile(r"[-_:/|.]")
_GLUE = re.compile(r"[-_:/|]")


@lru_cache(maxsize=16384)
def has_pii(value: str) -> bool:
    """PII anywhere in an identifier-like string (cached: agents and models repeat).

    Detectors refuse matches glued to word characters or dashes (``v-123-45-6789``,
    ``jane@example.com-0``) to spare prose; identifiers are glued by design, so a value
    that could hold an address or a number (an ``@`` or 4+ digits) is also checked with
    separators as spaces and from just after each separator.
    """
    if find_spans(value):
        return True
    if len(value) < 7 or not _SEP.search(value):
        return False
    if "@" not in value and sum(c.isdigit() for c in value) < 4:
        return False
    if find_spans(_GLUE.sub(" ", value)):
        return True
    return any(find_spans(value[m.end() :]) for m in list(_SEP.finditer(value))[:16])


def safe_id(value: str | None) -> str | None:
    """An identifier as is if it holds no PII, else its stable hash."""
    if value is None or not has_pii(value):
        return value
    return pii_free_id(value)


def redact_deep(value: Any, r: Redactor) -> Any:
    """Redact string values (by content and key) and dict keys (by content)."""
    v = r.value(value)
    return _keys(v, r)


_ID_LIKE_MAX = 256


def _clean_str(s: str, r: Redactor) -> str:
    """A key or short value: detector hits become placeholders; PII glued to an
    identifier (``user-jane@x.com``), which the text detectors spare, becomes a hash."""
    if len(s) < 7:
        return s
    red = r.text(s)
    if len(red) <= _ID_LIKE_MAX and has_pii(red):
        return pii_free_id(s)
    return red


#: a placeholder a first pass left (``<NAME_1>``, ``<API_KEY_2>``): masked before the glue
#: search, whose separators would otherwise start inside it (``1>'s age is 10``)
_PLACEHOLDER = re.compile(r"<[A-Z]+(?:_[A-Z]+)*_\d+>")
_SEP_CHARS = frozenset("-_:/|.")


def glued_spans(value: str) -> list[Span]:
    """PII glued into ``value`` that the text detectors spare (``Mary-Kate``,
    ``kenji@example.jp-1``, ``v-123-45-6789``): the searches of :func:`has_pii`, on the
    text with placeholders masked, keeping only matches that touch a separator or a word
    (a match that a shorter context alone made, ``... succeeded Wren as``, is prose)."""
    masked = _PLACEHOLDER.sub(lambda m: " " * len(m.group()), value)
    if len(masked.strip()) < 7 or not _SEP.search(masked):
        return []
    if "@" not in masked and sum(c.isdigit() for c in masked) < 4:
        return []
    found = list(find_spans(_GLUE.sub(" ", masked)))
    for m in list(_SEP.finditer(masked))[:16]:
        off = m.end()
        found += [
            Span(sp.start + off, sp.end + off, sp.kind, sp.priority)
            for sp in find_spans(masked[off:])
        ]
    out: list[Span] = []
    for sp in sorted(found, key=lambda x: (x.start, -x.length)):
        if out and sp.start < out[-1].end:
            continue
        if masked[sp.start : sp.end].strip() != value[sp.start : sp.end].strip():
            continue  # overlaps a placeholder
        if _glued(masked, sp.start, sp.end):
            out.append(sp)
    return out


def _glued(s: str, a: int, b: int) -> bool:
    if any(c in _SEP_CHARS for c in s[a:b]):
        return True
    before = s[a - 1] if a > 0 else " "
    after = s[b] if b < len(s) else " "
    return any(c in _SEP_CHARS or c.isalnum() for c in (before, after))


def _clean_content(s: str, r: Redactor) -> str:
    """A content string (a gold answer, a reference argument, an outcome): placeholders in
    place for what the detectors find and for PII glued into words; numbers, words and
    structure stay, so a reference is still gradeable (docs/pii.md)."""
    red = r.text(s)
    if len(red) > _ID_LIKE_MAX:
        return red
    spans = glued_spans(red)
    if not spans:
        return red
    out: list[str] = []
    pos = 0
    for sp in spans:
        out.append(red[pos : sp.start])
        out.append(r.placeholder(sp.kind, red[sp.start : sp.end]))
        pos = sp.end
    out.append(red[pos:])
    return "".join(out)


def _keys(v: Any, r: Redactor, depth: int = 0, content: bool = False) -> Any:
    """Dict keys as keys; string values ``content`` redacted in place, else as ids."""
    if depth >= limits.MAX_DEPTH_CEILING and isinstance(v, dict | list | tuple):
        raise NestingTooDeep(f"JSON nested deeper than {limits.MAX_DEPTH_CEILING} levels")
    if isinstance(v, dict):
        out: dict[Any, Any] = {}
        changed = False
        for k, item in v.items():
            nk = _clean_str(k, r) if isinstance(k, str) else k
            while nk != k and nk in out:
                nk = nk + "_"
            new = _keys(item, r, depth + 1, content)
            changed |= nk is not k or new is not item
            out[nk] = new
        return out if changed else v
    if isinstance(v, list | tuple):
        items = [_keys(i, r, depth + 1, content) for i in v]
        if all(a is b for a, b in zip(items, v, strict=True)):
            return v
        return items
    if isinstance(v, str) and (content or len(v) <= _ID_LIKE_MAX):
        new_s = _clean_content(v, r) if content else _clean_str(v, r)
        return v if new_s == v else new_s
    return v


def redact_payload(data: bytes) -> tuple[bytes, bool]:
    """Raw bytes (a rejected record) with PII removed: (bytes, whether anything changed).

    JSON is redacted value by value and key by key and re-encoded; anything else, and JSON
    nested deeper than any input is accepted with (``limits.MAX_DEPTH_CEILING``: orjson
    parses up to 1,024 levels, deeper than the walk may recurse), is read as UTF-8
    (undecodable bytes replaced) and redacted as text.
    """
    r = Redactor()
    try:
        parsed = limits.loads(data, max_depth=limits.MAX_DEPTH_CEILING, max_bytes=None)
    except InputError:
        parsed = None
    else:
        new = redact_deep(parsed, r)
        if new is parsed:
            return data, False
        try:
            return orjson.dumps(new), True
        except (TypeError, orjson.JSONEncodeError):
            pass
    text = data[:_TEXT_MAX].decode("utf-8", "replace")
    red = r.text(text)
    if red == text and len(data) <= _TEXT_MAX:
        try:
            data.decode("utf-8")
            return data, False
        except UnicodeDecodeError:
            pass
    return red.encode("utf-8", "replace"), True


def redact_str(s: str) -> str:
    return Redactor().text(s)


class _LazyRedactor(Redactor):
    """Most transcripts need no key redaction: skip building placeholder tables for them."""

    def text(self, s: str, place: bool = False) -> str:
        return super().text(s, place) if find_spans(s) else s


_ID_FIELDS = ("conversation_id", "agent", "model", "agent_version", "policy_version", "task_key")
#: field -> its string values are content (redacted in place), not identifiers (hashed)
_KEYED_FIELDS = {"metadata": False, "outcome": True, "label": True}


def redact_fields(t: Transcript, r: Redactor | None = None) -> Transcript:
    """Apply the per-field policy to a transcript whose text is already redacted:
    identifiers and names with PII become stable hashes, dict keys are redacted, content
    (label, outcome, tool-call arguments) keeps its structure with placeholders inside.
    Pass the conversation's redactor so placeholders continue its numbering."""
    r = r if r is not None else _LazyRedactor()
    upd: dict[str, Any] = {}
    for name in _ID_FIELDS:
        v = getattr(t, name)
        s = safe_id(v)
        if s != v:
            upd[name] = s
    for name, content in _KEYED_FIELDS.items():
        v = getattr(t, name)
        new = _keys(v, r, content=content)
        if new is not v:
            upd[name] = new
    messages = tuple(_message(m, r) for m in t.messages)
    if any(a is not b for a, b in zip(messages, t.messages, strict=True)):
        upd["messages"] = messages
    return replaced(t, upd) if upd else t


def _message(m: Message, r: Redactor) -> Message:
    upd: dict[str, Any] = {}
    for name in ("name", "tool_call_id"):
        v = getattr(m, name)
        s = safe_id(v)
        if s != v:
            upd[name] = s
    extra = _keys(m.extra, r)
    if extra is not m.extra:
        upd["extra"] = extra
    calls = tuple(_call(c, r) for c in m.tool_calls)
    if any(a is not b for a, b in zip(calls, m.tool_calls, strict=True)):
        upd["tool_calls"] = calls
    return replaced(m, upd) if upd else m


def _call(c: ToolCall, r: Redactor) -> ToolCall:
    upd: dict[str, Any] = {}
    for name in ("id", "name", "type"):
        v = getattr(c, name)
        s = safe_id(v)
        if s != v:
            upd[name] = s
    for name in ("arguments", "extra"):  # arguments are compared with reference calls
        v = getattr(c, name)
        new = _keys(v, r, content=name == "arguments")
        if new is not v:
            upd[name] = new
    if "arguments" in upd and c.raw_arguments is not None:
        upd["raw_arguments"] = orjson.dumps(upd["arguments"]).decode()
    return replaced(c, upd) if upd else c
