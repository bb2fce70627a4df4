"""Real conversations end where they end (issue 18 item 0): a trailing user thanks, stop
marker or tool result is kept and trained up to the last assistant turn; a cut-off
assistant turn is dropped; next_steps.md suggests only methods whose file has rows."""

from __future__ import annotations

import re

from tests.unit.curation.rollout_builders import group, rollout

from rlstream.curation import curate
from rlstream.curation.next_steps import render_next_steps
from rlstream.curation.records import sft_row, split_prompt
from rlstream.curation.writer import build_files
from rlstream.rollout import ScoredRollout
from rlstream.training.data import METHOD_FILES
from rlstream.transcript import Message, ToolCall


def _ending(r: ScoredRollout, *tail: Message) -> ScoredRollout:
    t = r.transcript
    return r.model_copy(update={"transcript": t.with_updates(messages=(*t.messages, *tail))})


THANKS = Message(role="user", content="Thank you so much for your help!")
STOP = Message(role="user", content="###STOP###")
TRANSFER = (
    Message(role="assistant", tool_calls=(ToolCall(id="x1", name="lookup_flight"),)),
    Message(role="tool", tool_call_id="x1", name="lookup_flight", content="[]"),
)


def test_trailing_user_stop_or_tool_result_is_kept_and_trimmed() -> None:
    rows = group("a", 4, 2)
    rows[0] = _ending(rows[0], THANKS)
    rows[1] = _ending(rows[1], STOP)
    rows[2] = _ending(rows[2], *TRANSFER)
    res = curate(rows)
    assert res.kept[0].n == 4
    assert not any(n for k, n in res.dropped_rollouts.items() if "truncated" in k or "no_" in k)
    for r in (rows[0], rows[1]):
        msgs = sft_row(r)["messages"]
        assert msgs[-1]["role"] == "assistant" and len(msgs) == len(r.transcript.messages) - 1
    # the tool-result ending trains up to the call, not the result
    completion = split_prompt(rows[2].transcript)[1]
    assert completion[-1]["role"] == "assistant" and completion[-1]["tool_calls"]


def test_cut_off_assistant_turn_is_dropped() -> None:
    rows = group("a", 4, 2)
    cut = Message(role="assistant", content="Let me", extra={"finish_reason": "length"})
    flagged = Message(role="assistant", content="Your refund", extra={"truncated": True})
    rows.append(
        _ending(rollout("a", 40, False, final=False), Message(role="user", content="?"), cut)
    )
    rows.append(_ending(rollout("a", 41, False), flagged, THANKS))
    rows.append(rollout("a", 42, False, metadata={"truncated": True}))
    res = curate(rows)
    assert res.dropped_rollouts["truncated_length"] == 3
    assert res.kept[0].n == 4


def _commands(md: str) -> set[str]:
    return set(re.findall(r"--method (\w+)", md))


def test_next_steps_never_suggests_a_method_with_no_rows() -> None:
    # one passing group of identical outcomes: no GRPO prompt, no DPO pair; only SFT rows
    res = curate(group("a", 4, 4), None)
    _, files, rows, _ = build_files(res)
    md = files["next_steps.md"].decode()
    suggested = _commands(md)
    assert suggested, md
    for m in suggested:  # gspo / ppo train on grpo.jsonl
        assert rows[METHOD_FILES[m]] > 0, (m, rows, md)
    empty = {"grpo.jsonl": 0, "dpo.jsonl": 0, "sft.jsonl": 0, "heldout.jsonl": 0}
    assert _commands(render_next_steps(res, empty)) == set()
