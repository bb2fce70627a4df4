"""parse(to_format(t, fmt)) keeps messages, tool calls (ids, names, arguments), tool-result
linkage and the conversation id, for every format."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlstream.formats import FORMATS, detect_format, parse_record, to_format
from rlstream.transcript.model import Message, ToolCall, Transcript

pytestmark = pytest.mark.unit

_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)
_ident = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_ident, inner, max_size=3),
    max_leaves=6,
)
_args = st.dictionaries(_ident, _json, max_size=4)


_ts = st.none() | st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
).map(lambda d: d.replace(microsecond=0))
_extra = st.just({}) | st.fixed_dictionaries({"lang": st.sampled_from(["en", "de"])})


@st.composite
def transcripts(draw: st.DrawFn) -> Transcript:
    msgs: list[Message] = []
    if draw(st.booleans()):
        msgs.append(Message(role="system", content=draw(_text)))
    n_turns = draw(st.integers(1, 4))
    call_no = 0
    for _ in range(n_turns):
        msgs.append(
            Message(role="user", content=draw(_text), timestamp=draw(_ts), extra=draw(_extra))
        )
        if draw(st.booleans()):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                call_no += 1
                calls.append(
                    ToolCall(id=f"call_{call_no}", name=draw(_ident), arguments=draw(_args))
                )
            said = draw(st.none() | _text)
            msgs.append(
                Message(
                    role="assistant",
                    content=said,
                    tool_calls=tuple(calls),
                    timestamp=draw(_ts),
                    extra=draw(_extra),
                )
            )
            for c in calls:
                msgs.append(
                    Message(
                        role="tool",
                        content=draw(_text),
                        tool_call_id=c.id,
                        name=c.name,
                        is_error=draw(st.booleans()),
                        timestamp=draw(_ts),
                    )
                )
        msgs.append(Message(role="assistant", content=draw(_text)))
    return Transcript(
        conversation_id=draw(st.from_regex(r"conv-[a-z0-9]{4,12}", fullmatch=True)),
        messages=tuple(msgs),
        model=draw(st.none() | st.just("gpt-4o")),
        tools=draw(
            st.just(())
            | st.just(({"name": "lookup", "description": "d", "parameters": {"type": "object"}},))
        ),
        agent_version=draw(st.none() | st.just("bot@1.2")),
        label=draw(st.none() | _text),
        started_at=draw(_ts),
        outcome=draw(st.just({}) | st.just({"resolved": True})),
        metadata={"task_id": draw(_ident)},
    )


def _shape(t: Transcript) -> list[tuple[object, ...]]:
    return [
        (
            m.role,
            m.content,
            m.tool_call_id,
            m.name,
            m.is_error,
            m.timestamp,
            m.extra.get("lang"),
            [(c.id, c.name, c.arguments) for c in m.tool_calls],
        )
        for m in t.messages
    ]


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=transcripts())
def test_round_trip_preserves_messages_calls_and_ids(fmt: str, t: Transcript) -> None:
    raw = to_format(t, fmt)
    back = parse_record(raw)
    detected = detect_format(raw)
    # a plain-text Anthropic record (no system, no blocks) is also a valid OpenAI record
    assert detected == fmt or (fmt == "anthropic" and detected == "openai" and "system" not in raw)
    assert _shape(parse_record(raw, fmt)) == _shape(t)
    assert back.conversation_id == t.conversation_id
    assert _shape(back) == _shape(t)
    assert back.model == t.model
    assert (back.tools, back.agent_version, back.label, back.started_at) == (
        t.tools,
        t.agent_version,
        t.label,
        t.started_at,
    )
    assert back.outcome == t.outcome
    assert back.metadata.get("task_id") == t.metadata["task_id"]


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=30, deadline=None)
@given(t=transcripts())
def test_emit_is_stable_after_one_cycle(fmt: str, t: Transcript) -> None:
    once = parse_record(to_format(t, fmt))
    twice = parse_record(to_format(once, fmt))
    assert twice.model_dump() == once.model_dump()
