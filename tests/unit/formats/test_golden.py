"""Golden files: each tests/golden/formats/<format>_<case>.input.json parses to exactly the
canonical JSON beside it, is detected as <format>, and drops no value it carried.

Regenerate after a deliberate change with RLSTREAM_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from rlstream.formats import detect_format, parse_record, to_format
from rlstream.formats._common import parse_ts
from rlstream.ingest import Ingestor

pytestmark = pytest.mark.unit

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "formats"
CASES = sorted(p.name.removesuffix(".input.json") for p in GOLDEN.glob("*.input.json"))


# values a format encodes as structure (roles, block types, class names, consumed attribute
# names); the canonical transcript carries them as roles / fields instead of strings
STRUCTURAL = frozenset(
    {"system", "user", "human", "assistant", "gpt", "ai", "tool", "function", "observation"}
    | {"function_call", "text", "tool_use", "tool_result", "tool_call", "tool_call_response"}
    | {"input_text", "output_text", "function_call_output", "model"}
    | {"constructor", "langchain", "schema", "messages", "ChatGeneration"}
    | {"SystemMessage", "HumanMessage", "AIMessage", "ToolMessage"}
    | {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"}
    | {"gen_ai.request.model", "gen_ai.conversation.id", "gen_ai.tool.definitions"}
)


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return _leaves(orjson.loads(value))  # JSON text: its values must survive
        except orjson.JSONDecodeError:
            pass
    if (isinstance(value, str) or (isinstance(value, int) and value > 10**9)) and parse_ts(value):
        return []  # timestamps survive as datetimes (checked by the golden comparison)
    return [] if value in STRUCTURAL else [str(value)]


def test_every_format_has_a_golden_case() -> None:
    assert {c.split("_")[0] for c in CASES} >= {
        "openai",
        "anthropic",
        "sharegpt",
        "langchain",
        "otel",
    }


@pytest.mark.parametrize("case", CASES)
def test_golden(case: str) -> None:
    record = orjson.loads((GOLDEN / f"{case}.input.json").read_bytes())
    assert detect_format(record) == case.split("_")[0]
    t = parse_record(record)
    got = t.model_dump(mode="json")
    expected_path = GOLDEN / f"{case}.expected.json"
    if os.environ.get("RLSTREAM_UPDATE_GOLDEN") == "1":
        expected_path.write_bytes(orjson.dumps(got, option=orjson.OPT_INDENT_2) + b"\n")
    assert got == orjson.loads(expected_path.read_bytes())


@pytest.mark.parametrize("case", CASES)
def test_golden_is_lossless(case: str) -> None:
    """Every scalar the source carried appears somewhere in the canonical transcript."""
    record = orjson.loads((GOLDEN / f"{case}.input.json").read_bytes())
    dumped = parse_record(record).dump_json().decode()
    missing = [
        leaf
        for leaf in _leaves(record)
        if leaf not in dumped and orjson.dumps(leaf).decode()[1:-1] not in dumped
    ]
    assert not missing, missing


@pytest.mark.parametrize("case", CASES)
def test_golden_ingests_and_round_trips(case: str) -> None:
    record = orjson.loads((GOLDEN / f"{case}.input.json").read_bytes())
    t = Ingestor().process(record)
    assert t.redacted and t.task_key and t.task_key_rule
    fmt = case.split("_")[0]
    again = parse_record(to_format(parse_record(record), fmt), fmt)
    assert [(m.role, m.content, m.tool_call_id) for m in again.messages] == [
        (m.role, m.content, m.tool_call_id) for m in parse_record(record).messages
    ]
