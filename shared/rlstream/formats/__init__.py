"""Parsers and emitters for every supported conversation log shape.

``parse_record(record, fmt="auto")`` turns one raw record into a canonical
:class:`~rlstream.transcript.model.Transcript`; ``to_format(t, fmt)`` goes the other way.
Formats: openai, anthropic, gemini, sharegpt, langchain, otel, canonical. Custom shapes go through a
:class:`FieldMapping` (dotted paths, loadable from YAML).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from rlstream.errors import SchemaViolation, UnknownFormatError
from rlstream.formats._common import FORMATS, get_path
from rlstream.formats.anthropic import parse_anthropic
from rlstream.formats.detect import detect_format
from rlstream.formats.emit import to_format
from rlstream.formats.gemini import parse_gemini
from rlstream.formats.langchain import parse_langchain
from rlstream.formats.mapping import FieldMapping, apply_mapping
from rlstream.formats.openai import parse_openai
from rlstream.formats.otel import parse_otel
from rlstream.formats.sharegpt import parse_sharegpt
from rlstream.transcript.model import Transcript

__all__ = [
    "FORMATS",
    "FieldMapping",
    "apply_mapping",
    "detect_format",
    "get_path",
    "parse_record",
    "to_format",
]


def parse_canonical(record: Mapping[str, Any]) -> Transcript:
    try:
        return Transcript.model_validate(record)
    except ValidationError as exc:
        raise SchemaViolation(f"canonical: {exc.errors()[0].get('msg', exc)}") from exc


PARSERS: dict[str, Callable[[Mapping[str, Any]], Transcript]] = {
    "openai": parse_openai,
    "anthropic": parse_anthropic,
    "gemini": parse_gemini,
    "sharegpt": parse_sharegpt,
    "langchain": parse_langchain,
    "otel": parse_otel,
    "canonical": parse_canonical,
}


def parse_record(record: Any, fmt: str = "auto", mapping: FieldMapping | None = None) -> Transcript:
    """One raw record -> Transcript. Raises InputError subclasses for records it can't take."""
    if not isinstance(record, Mapping):
        raise UnknownFormatError(f"a record must be a JSON object, got {type(record).__name__}")
    if mapping is not None:
        record = apply_mapping(record, mapping)
        if mapping.message_format != "auto":
            fmt = mapping.message_format
    name = detect_format(record) if fmt == "auto" else fmt
    parser = PARSERS.get(name)
    if parser is None:
        raise UnknownFormatError(f"unknown format {name!r}; expected one of {', '.join(FORMATS)}")
    try:
        t = parser(record)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        if isinstance(exc, ValidationError):
            raise SchemaViolation(f"{name}: {exc.errors()[0].get('msg', exc)}") from exc
        raise SchemaViolation(f"{name}: malformed record ({type(exc).__name__}: {exc})") from exc
    if mapping is not None and t.format != name:
        t = t.model_copy(update={"format": name})
    return t
