"""docs/formats.md's promise: a new format is ONE registration (name, detect, parse, emit).

The toy format below is registered in one place (the fixture) and nowhere else, and then
works everywhere a built-in does: ``--format auto`` detection in ``rlstream ingest``,
``--format toy``, ``to_format`` and the round trip.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rlstream.formats import (
    Format,
    detect_format,
    format_names,
    parse_record,
    register,
    to_format,
    unregister,
)
from rlstream.services.cli.main import app
from rlstream.transcript import Message, Transcript

pytestmark = pytest.mark.unit


def _detect(record: Mapping[str, Any]) -> bool:
    return isinstance(record.get("toy_turns"), list)


def _parse(record: Mapping[str, Any]) -> Transcript:
    return Transcript(
        conversation_id=str(record["toy_id"]),
        format="toy",
        messages=tuple(Message(role=role, content=text) for role, text in record["toy_turns"]),
    )


def _emit(t: Transcript) -> dict[str, Any]:
    return {"toy_id": t.conversation_id, "toy_turns": [[m.role, m.content] for m in t.messages]}


@pytest.fixture
def toy() -> Iterator[str]:
    register(Format("toy", _detect, _parse, _emit, order=5))  # the one registration
    yield "toy"
    unregister("toy")


def _records(n: int) -> list[dict[str, Any]]:
    return [
        {"toy_id": f"c{i}", "toy_turns": [["user", f"what is {i} + 1?"], ["assistant", str(i + 1)]]}
        for i in range(n)
    ]


def test_cli_auto_detection_ingests_a_registered_format(toy: str, tmp_path: Path) -> None:
    src = tmp_path / "toy.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _records(3)))
    out = tmp_path / "t.jsonl"
    result = CliRunner().invoke(app, ["ingest", str(src), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["conversation_id"], r["format"]) for r in rows] == [
        ("c0", "toy"),
        ("c1", "toy"),
        ("c2", "toy"),
    ]
    assert "toy 3" in result.output  # the per-format count in the summary
    forced = CliRunner().invoke(app, ["ingest", str(src), "--out", str(out), "--format", toy])
    assert forced.exit_code == 0, forced.output


def test_detect_parse_and_emit_round_trip(toy: str) -> None:
    record = _records(1)[0]
    assert toy in format_names() and detect_format(record) == toy
    t = parse_record(record)
    assert to_format(t, toy) == record and parse_record(to_format(t, toy)) == t


def test_a_name_cannot_be_registered_twice(toy: str) -> None:
    with pytest.raises(Exception, match="already registered"):
        register(Format(toy, _detect, _parse, _emit, order=99))


def test_unregistered_it_is_unknown_again(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="matches no supported format"):
        detect_format(_records(1)[0])
