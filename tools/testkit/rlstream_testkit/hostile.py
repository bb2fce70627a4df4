"""Hypothesis strategies for hostile raw records (issue 24's property tests).

A record is a valid conversation with one field that a service reads replaced by something
hostile: JSON nested up to 5,000 levels (past orjson's 1,024, past Python's recursion
limit), huge strings and arrays, wrong types, over-long ids; or arbitrary bytes for the whole
value; with arbitrary headers. Deep values are written as bytes, since no JSON encoder
writes them.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

HOLE = b'"__HOSTILE__"'

#: the fields a service reads, as paths into :func:`base_record`
FIELDS = (
    "conversation_id",
    "agent",
    "model",
    "messages",
    "messages.0",
    "messages.0.content",
    "messages.1.tool_calls",
    "messages.1.tool_calls.0.function.arguments",
    "messages.1.tool_calls.0.id",
    "messages.2.content",
    "messages.2.tool_call_id",
    "metadata",
    "label",
    "outcome",
    "outcome.resolved",
    "task_id",
)


def base_record(cid: str) -> dict[str, Any]:
    return {
        "conversation_id": cid,
        "agent": "support-bot",
        "model": "m1",
        "task_id": "t1",
        "messages": [
            {"role": "user", "content": "where is order 1234?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"order": "1234"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "shipped"}'},
            {"role": "assistant", "content": "It shipped yesterday."},
        ],
        "metadata": {"channel": "chat"},
        "outcome": {"resolved": True},
    }


def _set(record: dict[str, Any], path: str) -> dict[str, Any]:
    cur: Any = record
    parts = path.split(".")
    for p in parts[:-1]:
        cur = cur[int(p)] if isinstance(cur, list) else cur[p]
    last = parts[-1]
    if isinstance(cur, list):
        cur[int(last)] = "__HOSTILE__"
    else:
        cur[last] = "__HOSTILE__"
    return record


@st.composite
def nested(draw: st.DrawFn) -> bytes:
    """Arrays and objects nested 1..5,000 deep around a leaf (no encoder writes these)."""
    depth = draw(st.one_of(st.integers(1, 300), st.integers(900, 1100), st.integers(1, 5000)))
    leaf = draw(st.sampled_from([b'"x"', b"1", b"null", b'"mail jane.doe@example.com"']))
    if draw(st.booleans()):
        return b"[" * depth + leaf + b"]" * depth
    return b'{"a":' * depth + leaf + b"}" * depth


def _json(value: Any) -> bytes:
    """JSON bytes; integers past 64 bits too (orjson refuses to write them, a producer in
    another language will not: the services must take them)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value).encode()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=20,
)

hostile_values = st.one_of(
    nested(),
    st.integers(0, 9000).map(lambda n: _json("i" * n)),  # long ids / strings
    st.integers(1, 2_000_000).map(lambda n: _json("w " * (n // 2))),  # huge strings
    st.integers(0, 200_000).map(lambda n: b"[" + b",".join([b"0"] * n) + b"]"),  # huge arrays
    json_values.map(_json),
    st.sampled_from([b"[]", b"{}", b'""', b"true", b"-1e309", b"1e400", b'"\\ud800"']),
)


@st.composite
def hostile_records(draw: st.DrawFn, cid: str = "h") -> bytes:
    """One raw Kafka value: a conversation with one hostile field, or arbitrary bytes."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=4096))
    path = draw(st.sampled_from(FIELDS))
    body = _json(_set(base_record(cid), path))
    return body.replace(HOLE, draw(hostile_values), 1)


headers = st.lists(st.tuples(st.text(max_size=40), st.binary(max_size=600)), max_size=20)


def sample(n: int, max_bytes: int = 900_000) -> list[tuple[bytes, list[tuple[str, bytes]]]]:
    """``n`` (value, headers) drawn by hypothesis (derandomized: the same on every run),
    each value under ``max_bytes`` (a broker's default limit is 1 MB), for a real-broker run
    of the strategies the in-process property test explores at breadth."""
    out: list[tuple[bytes, list[tuple[str, bytes]]]] = []
    seen: set[bytes] = set()

    @settings(
        max_examples=8 * n,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(hostile_records().filter(lambda v: len(v) < max_bytes), headers)
    def collect(value: bytes, hdrs: list[tuple[str, bytes]]) -> None:
        if value not in seen:  # hypothesis repeats itself; a sample should not
            seen.add(value)
            out.append((value, hdrs))

    collect()
    return out[:n]
