"""Identifiers are bounded at ingest (issue 24): no index sees an oversized key."""

from __future__ import annotations

import pytest

from rlstream.events import RawTurnDelta
from rlstream.ingest import Ingestor
from rlstream.ingest.ids import LONG_IDS_KEY, bound_delta
from rlstream.limits import MAX_ID_BYTES, bounded_id

pytestmark = pytest.mark.unit


def record(cid: str, call_id: str = "call_1", agent: str = "bot") -> dict[str, object]:
    return {
        "conversation_id": cid,
        "agent": agent,
        "messages": [
            {"role": "user", "content": "where is my order"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "lookup", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "shipped"},
            {"role": "assistant", "content": "It shipped."},
        ],
    }


def test_an_8kb_conversation_id_becomes_a_stable_digest_with_its_length_recorded() -> None:
    long_id = "c" * 8192
    t = Ingestor().process(record(long_id))
    assert t.conversation_id == bounded_id(long_id) and t.conversation_id.startswith("long-")
    assert len(t.conversation_id.encode()) <= MAX_ID_BYTES
    assert t.metadata[LONG_IDS_KEY] == {"conversation_id": 8192}
    again = Ingestor().process(record(long_id))
    assert again.conversation_id == t.conversation_id  # equal ids still match


def test_long_tool_call_ids_and_agents_are_bounded_too() -> None:
    call = "k" * 3000
    t = Ingestor().process(record("c1", call_id=call, agent="a" * 400))
    assert t.conversation_id == "c1"
    assert t.agent is not None and t.agent.startswith("long-")
    assert t.messages[1].tool_calls[0].id == t.messages[2].tool_call_id == bounded_id(call)
    assert t.metadata[LONG_IDS_KEY] == {
        "agent": 400,
        "messages.1.tool_calls.0.id": 3000,
        "messages.2.tool_call_id": 3000,
    }


def test_multibyte_ids_are_bounded_by_bytes_not_characters() -> None:
    assert bounded_id("é" * 128) == "é" * 128  # 256 bytes: fits
    assert bounded_id("é" * 129).startswith("long-")


def test_ordinary_ids_are_untouched() -> None:
    t = Ingestor().process(record("conv-42"))
    assert t.conversation_id == "conv-42" and LONG_IDS_KEY not in t.metadata


def test_a_turn_delta_is_keyed_by_its_bounded_id() -> None:
    d = RawTurnDelta(conversation_id="d" * 9000, turn=0)
    assert bound_delta(d).conversation_id == bounded_id("d" * 9000)
    short = RawTurnDelta(conversation_id="d1", turn=0)
    assert bound_delta(short) is short
