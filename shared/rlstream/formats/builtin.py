"""The built-in formats; ``order`` is the detection order (most specific shape first).

``order`` leaves gaps of 10 so a new format can slot in between: a shape with a distinctive
top-level key goes before ``anthropic`` (60) and ``openai`` (70), which take whatever is
left of the bare ``messages`` shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from rlstream.errors import SchemaViolation
from rlstream.formats import detect, emit
from rlstream.formats.anthropic import parse_anthropic
from rlstream.formats.gemini import is_gemini_record, parse_gemini
from rlstream.formats.langchain import parse_langchain
from rlstream.formats.openai import parse_openai
from rlstream.formats.otel import parse_otel
from rlstream.formats.registry import Format, register
from rlstream.formats.sharegpt import parse_sharegpt
from rlstream.formats.while_rows import emit_while, is_while, parse_while
from rlstream.transcript.model import Transcript


def parse_canonical(record: Mapping[str, Any]) -> Transcript:
    try:
        return Transcript.model_validate(record)
    except ValidationError as exc:
        raise SchemaViolation(f"canonical: {exc.errors()[0].get('msg', exc)}") from exc


#: listed as ``--help`` shows them; ``order`` is the detection order
BUILTIN = (
    Format("openai", detect.is_openai, parse_openai, emit.emit_openai, order=70),
    Format("anthropic", detect.is_anthropic, parse_anthropic, emit.emit_anthropic, order=60),
    Format("gemini", is_gemini_record, parse_gemini, emit.emit_gemini, order=40),
    Format("sharegpt", detect.is_sharegpt, parse_sharegpt, emit.emit_sharegpt, order=50),
    Format("langchain", detect.is_langchain, parse_langchain, emit.emit_langchain, order=30),
    Format("otel", detect.is_otel, parse_otel, emit.emit_otel, order=20),
    Format("canonical", detect.is_canonical, parse_canonical, emit.emit_canonical, order=10),
    # before canonical: a While row may carry conversation_id and messages too
    Format("while", is_while, parse_while, emit_while, order=5),
)

for _fmt in BUILTIN:
    register(_fmt)
