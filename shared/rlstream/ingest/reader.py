"""Stream records out of files: JSONL or a JSON array, plain or gzip, in constant memory.

The container is sniffed from the bytes, not the name: gzip by its magic number, an array by
its first non-blank byte (then ijson streams the items), JSONL otherwise; a single pretty-
printed JSON object file is read as one record. A line that is not JSON becomes an error
item and reading goes on; a broken array cannot be resynchronised, so it ends that file.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rlstream import limits
from rlstream.errors import InputError, MessageTooLarge, ParseError
from rlstream.transcript.model import SourceRef

EXCERPT = limits.EXCERPT_CHARS
_SUFFIXES = (".jsonl", ".json", ".ndjson", ".gz", ".jsonl.gz", ".json.gz")


@dataclass(frozen=True, slots=True)
class RawItem:
    """One record read from a file, or the error that stopped it from being read."""

    source: SourceRef
    record: Any = None
    error: InputError | None = None
    excerpt: str = ""


def expand_paths(paths: Iterable[str | Path]) -> list[str]:
    """Files named, plus the JSON / JSONL / gzip files under named directories (sorted)."""
    out: list[str] = []
    for p in paths:
        s = str(p)
        if s != "-" and os.path.isdir(s):
            out.extend(
                str(f)
                for f in sorted(Path(s).rglob("*"))
                if f.is_file() and f.name.endswith(_SUFFIXES)
            )
        else:
            out.append(s)
    return out


def _open(path: str) -> tuple[io.BufferedReader, IO[bytes]]:
    """(decoded stream, raw stream for progress) — gzip detected by magic bytes."""
    raw: Any = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    buffered: io.BufferedReader = (
        raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
    )
    if buffered.peek(2)[:2] == b"\x1f\x8b":
        return io.BufferedReader(gzip.GzipFile(fileobj=buffered)), raw
    return buffered, raw


def _first_byte(stream: io.BufferedReader) -> bytes:
    head: bytes = stream.peek(4096)
    return head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]


def _excerpt(data: bytes) -> str:
    return limits.excerpt(data)


class FileReader:
    """Items of one file; never raises for bad content, only for an unreadable file.

    ``position()`` is how many (compressed) bytes have been consumed, for progress bars.
    """

    def __init__(
        self, path: str, max_record_bytes: int | None = None, max_depth: int = limits.MAX_DEPTH
    ) -> None:
        self.path = path
        self.max_record_bytes = max_record_bytes
        self.max_depth = max_depth
        self._raw: IO[bytes] | None = None
        self.items = 0

    def position(self) -> int:
        raw = self._raw
        if raw is None or raw is sys.stdin.buffer or raw.closed:
            return 0
        try:
            return raw.tell()
        except (OSError, ValueError):
            return 0

    def __iter__(self) -> Iterator[RawItem]:
        stream, raw = _open(self.path)
        self._raw = raw
        self.items = 0
        try:
            items = (
                _iter_array(self.path, stream, self.max_record_bytes, self.max_depth)
                if _first_byte(stream) == b"["
                else _iter_lines(self.path, stream, self.max_record_bytes, self.max_depth)
            )
            for item in items:
                self.items += 1
                yield item
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            # a truncated / corrupt gzip ends the file, not the run; what came before stands
            src = SourceRef(kind="file", file=self.path, line=None)
            err = ParseError(
                f"corrupt or truncated compressed stream after item {self.items}: {exc}"
            )
            yield RawItem(src, error=err)
        finally:
            if raw is not sys.stdin.buffer:
                raw.close()


def iter_file(
    path: str, max_record_bytes: int | None = None, max_depth: int = limits.MAX_DEPTH
) -> Iterator[RawItem]:
    return iter(FileReader(path, max_record_bytes, max_depth))


def _iter_array(
    path: str, stream: io.BufferedReader, limit: int | None, max_depth: int
) -> Iterator[RawItem]:
    index = 0
    try:
        for index, item in enumerate(
            limits.iter_array(stream, max_depth=max_depth, max_bytes=limit), start=1
        ):
            src = SourceRef(kind="file", file=path, line=index)
            if isinstance(item, InputError):
                yield RawItem(src, error=item)
            else:
                yield RawItem(src, record=item)
    except (ParseError, ValueError) as exc:
        src = SourceRef(kind="file", file=path, line=index + 1)
        yield RawItem(src, error=ParseError(f"invalid JSON array after item {index}: {exc}"))


def _iter_lines(
    path: str, stream: io.BufferedReader, limit: int | None, max_depth: int
) -> Iterator[RawItem]:
    first_record = True
    for lineno, line in enumerate(stream, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        src = SourceRef(kind="file", file=path, line=lineno)
        try:
            record = limits.loads(stripped, max_depth=max_depth, max_bytes=limit)
        except ParseError as exc:
            if first_record and stripped.startswith(b"{"):
                # not JSONL: one pretty-printed JSON document
                yield from _iter_document(path, stream, line, limit, max_depth)
                return
            yield RawItem(src, error=exc, excerpt=_excerpt(stripped))
            first_record = False
            continue
        except InputError as exc:  # too large / too deep
            yield RawItem(src, error=exc, excerpt=_excerpt(stripped))
            first_record = False
            continue
        first_record = False
        yield RawItem(src, record=record)


def _iter_document(
    path: str, stream: io.BufferedReader, head: bytes, limit: int | None, max_depth: int
) -> Iterator[RawItem]:
    # read at most one byte past the limit: a huge document is rejected, never held
    body = head + (stream.read() if limit is None else stream.read(max(0, limit + 1 - len(head))))
    src = SourceRef(kind="file", file=path, line=1)
    if limit is not None and len(body) > limit:
        err = MessageTooLarge(f"JSON document exceeds the {limit}-byte limit")
        yield RawItem(src, error=err, excerpt=_excerpt(body))
        return
    try:
        yield RawItem(src, record=limits.loads(body, max_depth=max_depth, max_bytes=None))
    except InputError as exc:
        yield RawItem(src, error=exc, excerpt=_excerpt(body))


def file_size(path: str) -> int:
    try:
        return 0 if path == "-" else os.path.getsize(path)
    except OSError:
        return 0
