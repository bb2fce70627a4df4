"""The format registry: one :class:`Format` (name, detect, parse, emit) per log shape.

Adding a format is one :func:`register` call (see docs/formats.md); ``--format NAME``,
``--format auto`` detection, ``parse_record`` and ``to_format`` all read this registry.
Detection asks each format's ``detect`` in ascending ``order`` (the most specific shapes
first) and the first that says yes wins; a ``detect`` may raise UnknownFormatError to refuse
a record it recognises as ambiguous. The built-in formats and their order are in
:mod:`rlstream.formats.builtin`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rlstream.errors import ConfigError, UnknownFormatError
from rlstream.transcript.model import Transcript

Record = Mapping[str, Any]


@dataclass(frozen=True)
class Format:
    """One supported log shape."""

    #: what ``--format`` and ``Transcript.format`` call it
    name: str
    #: does this (JSON object) record look like this format? Look at as little as possible:
    #: ingest calls it per record
    detect: Callable[[Record], bool]
    #: record -> Transcript; KeyError/TypeError/ValueError become SchemaViolation
    parse: Callable[[Record], Transcript]
    #: Transcript -> record, the inverse of ``parse`` (sample data, round-trip tests)
    emit: Callable[[Transcript], dict[str, Any]]
    #: detection order: lower is asked first (built-ins use 10..70, see builtin.py)
    order: int


_FORMATS: dict[str, Format] = {}
_DETECT: list[Format] = []


def register(fmt: Format) -> Format:
    """Add ``fmt``; its name must be new (``auto`` is taken by detection)."""
    if fmt.name == "auto" or fmt.name in _FORMATS:
        raise ConfigError(f"format {fmt.name!r} is already registered")
    _FORMATS[fmt.name] = fmt
    _DETECT.append(fmt)
    _DETECT.sort(key=lambda f: f.order)  # stable: equal orders keep registration order
    return fmt


def unregister(name: str) -> None:
    """Remove a format (tests that register a toy one clean up with this)."""
    fmt = _FORMATS.pop(name)
    _DETECT.remove(fmt)


def format_names() -> tuple[str, ...]:
    """Every registered format, in registration order."""
    return tuple(_FORMATS)


def get_format(name: str) -> Format:
    fmt = _FORMATS.get(name)
    if fmt is None:
        raise UnknownFormatError(
            f"unknown format {name!r}; expected one of {', '.join(format_names())}"
        )
    return fmt


def detect_format(record: Any) -> str:
    """Name of the format ``record`` is in; raises UnknownFormatError when nothing fits."""
    if not isinstance(record, Mapping):
        raise UnknownFormatError(f"a record must be a JSON object, got {type(record).__name__}")
    for fmt in _DETECT:
        if fmt.detect(record):
            return fmt.name
    raise UnknownFormatError(
        f"record matches no supported format ({', '.join(format_names())}); "
        f"top-level keys: {sorted(record)[:12]}"
    )


def to_format(t: Transcript, fmt: str) -> dict[str, Any]:
    """Render ``t`` as a raw record of format ``fmt``."""
    found = _FORMATS.get(fmt)
    if found is None:
        raise ConfigError(f"unknown format {fmt!r}; expected one of {', '.join(format_names())}")
    return found.emit(t)
