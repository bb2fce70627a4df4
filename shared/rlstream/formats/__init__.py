"""Parsers and emitters for every supported conversation log shape.

``parse_record(record, fmt="auto")`` turns one raw record into a canonical
:class:`~rlstream.transcript.model.Transcript`; ``to_format(t, fmt)`` goes the other way.
Each format is one :class:`Format` (name, detect, parse, emit) in the registry
(:mod:`rlstream.formats.registry`; the built-ins and their detection order are in
:mod:`rlstream.formats.builtin`; how to add one: docs/formats.md). Custom shapes go through
a :class:`FieldMapping` (dotted paths, loadable from YAML).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from rlstream.errors import SchemaViolation, UnknownFormatError
from rlstream.formats import builtin as _builtin  # registers the built-in formats
from rlstream.formats._common import content_hash, dumps_sorted, get_path
from rlstream.formats.mapping import FieldMapping, apply_mapping
from rlstream.formats.registry import (
    Format,
    detect_format,
    format_names,
    get_format,
    register,
    to_format,
    unregister,
)
from rlstream.transcript.model import Transcript

#: the built-in formats' names (``format_names()`` also lists any registered later)
FORMATS: tuple[str, ...] = tuple(f.name for f in _builtin.BUILTIN)

__all__ = [
    "FORMATS",
    "FieldMapping",
    "Format",
    "apply_mapping",
    "content_hash",
    "detect_format",
    "dumps_sorted",
    "format_names",
    "get_format",
    "get_path",
    "parse_record",
    "register",
    "to_format",
    "unregister",
]


def parse_record(record: Any, fmt: str = "auto", mapping: FieldMapping | None = None) -> Transcript:
    """One raw record -> Transcript. Raises InputError subclasses for records it can't take."""
    if not isinstance(record, Mapping):
        raise UnknownFormatError(f"a record must be a JSON object, got {type(record).__name__}")
    if mapping is not None:
        record = apply_mapping(record, mapping)
        if mapping.message_format != "auto":
            fmt = mapping.message_format
    name = detect_format(record) if fmt == "auto" else fmt
    parser = get_format(name).parse
    try:
        t = parser(record)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        if isinstance(exc, ValidationError):
            raise SchemaViolation(f"{name}: {exc.errors()[0].get('msg', exc)}") from exc
        raise SchemaViolation(f"{name}: malformed record ({type(exc).__name__}: {exc})") from exc
    if mapping is not None and t.format != name:
        t = t.model_copy(update={"format": name})
    return t
