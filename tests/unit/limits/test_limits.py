"""Hostile JSON: depth and size are bounded wherever input is parsed or re-serialised."""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from rlstream import limits
from rlstream.errors import MessageTooLarge, NestingTooDeep, ParseError
from rlstream.ingest import IngestOptions, Ingestor, Reject, ingest_paths
from rlstream.services.cli.main import app
from rlstream.transcript import Transcript

pytestmark = pytest.mark.unit


def _good(i: int) -> dict[str, Any]:
    return {
        "id": f"good-{i}",
        "messages": [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": "answer"},
        ],
    }


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _depth(v: Any) -> int:
    if isinstance(v, dict):
        return 1 + max((_depth(x) for x in v.values()), default=0)
    if isinstance(v, list):
        return 1 + max((_depth(x) for x in v), default=0)
    return 0


def _random_value(rng: random.Random, depth: int) -> Any:
    if depth == 0 or rng.random() < 0.2:
        return rng.choice([1, 2.5, None, True, "a]]}}", '"[[{', "\\\\[", "x"])
    if rng.random() < 0.5:
        return [_random_value(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {f"k{i}[": _random_value(rng, depth - 1) for i in range(rng.randint(0, 3))}


def test_too_deep_matches_the_true_depth_on_random_json_with_brackets_in_strings() -> None:
    rng = random.Random(7)
    for _ in range(400):
        v = _random_value(rng, rng.randint(0, 12))
        text = orjson.dumps(v)
        true = _depth(v)
        for bound in (max(0, true - 1), true, true + 1):
            assert limits.too_deep(text, bound) == (true > bound), (text, bound)
            assert limits.too_deep(text.decode(), bound) == (true > bound)
            assert limits.value_too_deep(v, bound) == (true > bound)


def test_loads_rejects_deep_large_and_invalid_with_input_errors() -> None:
    with pytest.raises(NestingTooDeep):
        limits.loads(_nested(limits.MAX_DEPTH + 1))
    assert limits.loads(_nested(limits.MAX_DEPTH)) is not None
    with pytest.raises(MessageTooLarge):
        limits.loads(b"[1, 2, 3]", max_bytes=4)
    with pytest.raises(ParseError):
        limits.loads(b"{nope")
    # 100,000 levels are refused before the parser sees them, in well under a second
    with pytest.raises(NestingTooDeep):
        limits.loads(_nested(100_000).encode())


def test_excerpt_never_raises_whatever_the_depth() -> None:
    deep: Any = []
    for _ in range(50_000):  # far past Python's recursion limit and orjson's 255
        deep = [deep]
    text = limits.excerpt({"a": deep, "b": object()})
    assert text.startswith('{"a":[[[[') and len(text) == limits.EXCERPT_CHARS
    assert limits.excerpt({"x": "y" * 10_000}, 20) == '{"x":"yyyyyyyyyyyyyy'


def test_tool_arguments_nested_too_deeply_stay_a_string_and_the_record_survives() -> None:
    args = '{"q": ' + _nested(5_000) + "}"
    rec = {
        "id": "c1",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "t1", "type": "function", "function": {"name": "f", "arguments": args}}
                ],
            },
        ],
    }
    t = Ingestor().process_bytes(orjson.dumps(rec))
    call = t.messages[1].tool_calls[0]
    assert call.raw_arguments == args and not isinstance(call.arguments, dict)
    assert Transcript.model_validate_json(t.dump_json()) == t  # re-serialises fine


def test_kafka_body_nested_too_deeply_is_an_input_error() -> None:
    body = b'{"messages": ' + _nested(1_000).encode() + b"}"
    with pytest.raises(NestingTooDeep):
        Ingestor().process_bytes(body)


def test_jsonl_line_1000_deep_is_rejected_with_file_line_and_the_next_record_kept(
    tmp_path: Path,
) -> None:
    p = tmp_path / "mixed.jsonl"
    deep = '{"messages": [{"role": "user", "content": "x"}], "x": ' + _nested(1_000) + "}"
    p.write_text(
        orjson.dumps(_good(1)).decode()
        + "\n"
        + deep
        + "\n"
        + orjson.dumps(_good(2)).decode()
        + "\n"
    )
    out = list(ingest_paths([p]))
    rejects = [r for r in out if isinstance(r, Reject)]
    assert [t.conversation_id for t in out if isinstance(t, Transcript)] == ["good-1", "good-2"]
    assert len(rejects) == 1 and rejects[0].error_code == "nesting_too_deep"
    assert rejects[0].source.line == 2 and rejects[0].raw_excerpt.startswith('{"messages"')
    # the CLI writes the reject and the good records, no traceback
    res = CliRunner().invoke(app, ["ingest", str(p), "--out", str(tmp_path / "t.jsonl")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "t.jsonl").read_text().count("\n") == 2
    assert "nesting_too_deep" in (tmp_path / "t.jsonl.rejects.jsonl").read_text()


@pytest.mark.parametrize("depth", [1_000, 30_000, 100_000])
def test_array_file_of_deep_brackets_is_rejected_in_bounded_memory(
    tmp_path: Path, depth: int
) -> None:
    p = tmp_path / "deep.json"
    # one deep item between two good ones: the array goes on after it
    p.write_text(
        "[" + orjson.dumps(_good(1)).decode() + "," + _nested(depth) + ","
        + orjson.dumps(_good(2)).decode() + "]"
    )  # fmt: skip
    tracemalloc.start()
    try:
        out = list(ingest_paths([p]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [t.conversation_id for t in out if isinstance(t, Transcript)] == ["good-1", "good-2"]
    bad = [r for r in out if isinstance(r, Reject)]
    assert [(r.error_code, r.source.line) for r in bad] == [("nesting_too_deep", 2)]
    assert peak < 20 * 1024 * 1024  # was 23 GB at 100,000 levels (ijson prefixes)


def test_array_item_over_the_size_limit_is_rejected_and_the_rest_read(tmp_path: Path) -> None:
    p = tmp_path / "big.json"
    big = {"id": "big", "messages": [{"role": "user", "content": "x" * 5_000}]}
    p.write_bytes(orjson.dumps([_good(1), big, _good(2)]))
    out = list(ingest_paths([p], IngestOptions(max_record_bytes=2_000)))
    assert [t.conversation_id for t in out if isinstance(t, Transcript)] == ["good-1", "good-2"]
    assert [r.error_code for r in out if isinstance(r, Reject)] == ["message_too_large"]


def test_single_document_is_read_up_to_the_limit_only(tmp_path: Path) -> None:
    p = tmp_path / "doc.json"
    p.write_bytes(orjson.dumps(_good(1), option=orjson.OPT_INDENT_2)[:-1] + b" " * 10_000 + b"}")
    out = list(ingest_paths([p], IngestOptions(max_record_bytes=1_000)))
    assert [r.error_code for r in out if isinstance(r, Reject)] == ["message_too_large"]
    deep = tmp_path / "deepdoc.json"
    deep.write_text('{\n "messages": ' + _nested(2_000) + "\n}")
    out = list(ingest_paths([deep]))
    assert [r.error_code for r in out if isinstance(r, Reject)] == ["nesting_too_deep"]
