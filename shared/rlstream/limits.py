"""Bounds on untrusted JSON: size and nesting depth, checked before anything recurses.

Every place rlstream parses or re-serialises outside input goes through here: files (lines,
array items, whole documents), Kafka message bodies, JSON-in-string tool arguments, and the
excerpts written to rejects files and dead-letter records. Without a bound, a 200 KB line of
brackets costs gigabytes in a streaming parser, a RecursionError in ``repr`` or a failure in
``orjson.dumps`` (which stops at 255 levels) long after the record was accepted.

``MAX_DEPTH`` is far above any real conversation log (tool JSON schemas nest ~10 levels) and
below every recursive step downstream: orjson's encoder (255), pydantic and Python (~1000).
Depth counts containers: ``1`` is 0 deep, ``[1]`` 1, ``{"a": [1]}`` 2.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import IO, Any

import ijson
import orjson

from rlstream.errors import MessageTooLarge, NestingTooDeep, ParseError

#: deepest nesting of arrays / objects accepted in any input record
MAX_DEPTH = 128
#: the most any caller may raise MAX_DEPTH to (orjson's encoder stops at 255)
MAX_DEPTH_CEILING = 200
#: largest record accepted by default (a line, an array item, a message body)
MAX_BYTES = 64 * 1024 * 1024
#: characters kept in a reject / DLQ excerpt
EXCERPT_CHARS = 300
#: longest identifier (conversation, tool call, task key, agent ...) kept as is, in UTF-8
#: bytes: several of them share one Postgres index row, which must stay under btree's
#: 2,704-byte limit
MAX_ID_BYTES = 256

_STRING_B = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_STRING_S = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_PAIR_B = re.compile(rb"\[\]|\{\}")
_PAIR_S = re.compile(r"\[\]|\{\}")
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_BRACKET_S = re.compile(r"[^\[\]{}]+")


def too_deep(data: bytes | str, max_depth: int = MAX_DEPTH) -> bool:
    """True when JSON text nests deeper than ``max_depth`` (brackets in strings don't count).

    Runs in C-speed passes without parsing: strings are cut out, the brackets that remain are
    the skeleton, and each pass deletes the innermost ``[]`` / ``{}`` pairs, so a skeleton
    that survives ``max_depth`` passes is deeper than that. Text with fewer opening brackets
    than ``max_depth`` is accepted without a pass. Malformed text answers False (the parser
    then says what is wrong).
    """
    if isinstance(data, str):
        if data.count("[") + data.count("{") <= max_depth:
            return False
        skel_s = _NOT_BRACKET_S.sub("", _STRING_S.sub("", data))
        passes = 0
        while skel_s:
            reduced_s = _PAIR_S.sub("", skel_s)
            if len(reduced_s) == len(skel_s):
                return False
            passes += 1
            if passes > max_depth:
                return True
            skel_s = reduced_s
        return False
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return False
    skel = _STRING_B.sub(b"", data).translate(None, _NOT_BRACKET)
    passes = 0
    while skel:
        reduced = _PAIR_B.sub(b"", skel)
        if len(reduced) == len(skel):
            return False
        passes += 1
        if passes > max_depth:
            return True
        skel = reduced
    return False


def value_too_deep(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """The same bound for an already-parsed value, walked without recursion."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            children: Any = v.values()
        elif isinstance(v, list | tuple):
            children = v
        else:
            continue
        depth += 1
        if depth > max_depth:
            return True
        stack.extend((c, depth) for c in children if isinstance(c, dict | list | tuple))
    return False


def check_value(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Raise NestingTooDeep for a parsed value deeper than ``max_depth``."""
    if value_too_deep(value, max_depth):
        raise NestingTooDeep(f"JSON nested deeper than {max_depth} levels")


def bounded_id(value: str, max_bytes: int = MAX_ID_BYTES) -> str:
    """``value`` if it fits ``max_bytes`` (UTF-8), else a stable digest of it (``long-`` +
    32 hex digits of its sha256), so equal ids still match and no index sees the long one."""
    if len(value) * 4 <= max_bytes:  # fast path: no UTF-8 character is longer than 4 bytes
        return value
    raw = value.encode("utf-8", "surrogatepass")
    if len(raw) <= max_bytes:
        return value
    return "long-" + hashlib.sha256(raw).hexdigest()[:32]


def loads(
    data: bytes | bytearray | memoryview | str,
    *,
    max_depth: int = MAX_DEPTH,
    max_bytes: int | None = MAX_BYTES,
) -> Any:
    """Bounded ``orjson.loads``: MessageTooLarge, NestingTooDeep or ParseError, never more.

    The one way rlstream decodes untrusted JSON text (Kafka values, lines, documents).
    """
    text: bytes | str = bytes(data) if isinstance(data, bytearray | memoryview) else data
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    if max_bytes is not None and size > max_bytes:
        raise MessageTooLarge(f"record of {size} bytes exceeds the {max_bytes}-byte limit")
    if too_deep(text, max_depth):
        raise NestingTooDeep(f"JSON nested deeper than {max_depth} levels")
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON: {exc}") from exc


def loads_maybe(value: Any, max_depth: int = MAX_DEPTH) -> Any:
    """Decode JSON-in-a-string (tool arguments); anything else, or text that is not JSON or
    is nested too deeply, comes back unchanged (the raw string is kept, nothing recurses)."""
    if isinstance(value, str | bytes):
        if too_deep(value, max_depth):
            return value
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


class _Raw(str):
    """Literal JSON punctuation in the excerpt token stream."""


def _parts(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        yield _Raw("{")
        for i, (k, v) in enumerate(value.items()):
            yield _Raw(("," if i else "") + orjson.dumps(str(k)).decode() + ":")
            yield v
        yield _Raw("}")
    else:
        yield _Raw("[")
        for i, v in enumerate(value):
            if i:
                yield _Raw(",")
            yield v
        yield _Raw("]")


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """The first ``limit`` characters of ``value`` as compact JSON; never raises, whatever the
    depth or type (bytes are decoded leniently). Rendering is lazy and iterative, so a deep
    or huge value costs only what the excerpt shows."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value[: limit * 4]).decode("utf-8", errors="replace")[:limit]
    out: list[str] = []
    size = 0
    stack: list[Iterator[Any]] = [iter((value,))]
    while stack and size < limit:
        try:
            item = next(stack[-1])
        except StopIteration:
            stack.pop()
            continue
        if isinstance(item, _Raw):
            piece = str(item)
        elif isinstance(item, dict | list | tuple):
            stack.append(_parts(item))
            continue
        elif isinstance(item, str):
            piece = orjson.dumps(item[: limit + 1]).decode()
        else:
            try:
                piece = orjson.dumps(item).decode()
            except (TypeError, orjson.JSONEncodeError):
                piece = orjson.dumps(str(item)[: limit + 1]).decode()
        out.append(piece)
        size += len(piece)
    return "".join(out)[:limit]


def iter_array(
    stream: IO[bytes], *, max_depth: int = MAX_DEPTH, max_bytes: int | None = MAX_BYTES
) -> Iterator[Any | NestingTooDeep | MessageTooLarge]:
    """Items of a top-level JSON array, streamed; an item too deep or too large is yielded as
    its error (its events are skipped, the items after it still come). Memory stays bounded
    by the limits whatever the input. Raises ParseError for a broken array.

    ``ijson.items`` is not used: it builds a dotted prefix per event, quadratic in depth (100k
    nested brackets took 23 GB).
    """
    depth = 0
    containers: list[Any] = []
    key: str = ""
    skipping: NestingTooDeep | MessageTooLarge | None = None
    size = 0
    try:
        for event, value in ijson.basic_parse(stream, use_float=True):
            if event == "start_map" or event == "start_array":
                depth += 1
                if depth == 1:
                    if event == "start_map":
                        raise ParseError("expected a JSON array, got an object")
                    continue
                if skipping is not None:
                    continue
                if depth - 1 > max_depth:
                    skipping = NestingTooDeep(f"JSON nested deeper than {max_depth} levels")
                    containers.clear()
                    continue
                new: Any = {} if event == "start_map" else []
                size += 2
            elif event == "end_map" or event == "end_array":
                depth -= 1
                if depth == 0:
                    return
                if skipping is None:
                    done = containers.pop()
                    if containers:
                        continue
                    yield done
                elif depth == 1:
                    yield skipping
                    skipping = None
                size = 0 if depth == 1 else size
                continue
            elif event == "map_key":
                if skipping is None:
                    key = value
                    size += len(value) + 3
                continue
            else:
                if skipping is not None:
                    continue
                if depth == 1:
                    yield value
                    continue
                new = value
                size += len(value) + 2 if isinstance(value, str) else 8
            if max_bytes is not None and size > max_bytes:
                skipping = MessageTooLarge(f"array item exceeds the {max_bytes}-byte limit")
                containers.clear()
                continue
            if containers:
                top = containers[-1]
                if isinstance(top, list):
                    top.append(new)
                else:
                    top[key] = new
            if event == "start_map" or event == "start_array":
                containers.append(new)
    except (ijson.JSONError, ijson.IncompleteJSONError) as exc:
        raise ParseError(f"invalid JSON array: {exc}") from exc
