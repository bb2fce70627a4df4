"""Surface features, normalisation, fingerprints and truncation detection."""

from __future__ import annotations

import pytest

from rlstream.metrics import RolloutRow
from rlstream.metrics.features import (
    exact_fingerprint,
    normalise_text,
    repetition,
    surface_features,
    truncation_reason,
)
from rlstream.rewards import RewardResult
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message, ToolCall, Transcript

pytestmark = pytest.mark.unit


def _t(*messages: Message, **kw: object) -> Transcript:
    return Transcript.model_validate({"conversation_id": "c1", "messages": messages, **kw})


def _agent(text: str, order: str = "A1B2C3") -> Transcript:
    return _t(
        Message(role="user", content="Where is my order?"),
        Message(
            role="assistant", tool_calls=(ToolCall(id="x", name="lookup", arguments={"id": order}),)
        ),
        Message(role="tool", tool_call_id="x", name="lookup", content="shipped"),
        Message(role="assistant", content=text),
    )


def test_surface_features() -> None:
    f = surface_features(_agent("It shipped, it shipped, it shipped today"))
    assert f["tool_calls"] == 1.0 and f["assistant_turns"] == 2.0
    assert f["tool:lookup"] == 1.0
    assert f["reply_length"] == len("It shipped, it shipped, it shipped today")
    # words: it shipped it shipped it shipped today -> 5 trigrams, 3 unique
    assert f["repetition"] == pytest.approx(1 - 3 / 5)
    assert f["truncated"] == 0.0


def test_repetition_edge_cases() -> None:
    assert repetition([]) == 0.0
    assert repetition(["a", "b"]) == 0.0
    assert repetition(["a"] * 10) == pytest.approx(1 - 1 / 8)


def test_normalise_masks_ids_numbers_case_space() -> None:
    a = normalise_text("Your  refund of $42.50 for order AB12CD34 is\nON its way")
    b = normalise_text("your refund of $17.00 for order ZZ99XY11 is on its way")
    assert a == b == "your refund of $<n> for order <id> is on its way"


def test_fingerprint_sees_tools_and_args_but_not_masked_text() -> None:
    base = exact_fingerprint(_agent("Order 123 shipped"))
    assert exact_fingerprint(_agent("order 456   SHIPPED")) == base
    assert exact_fingerprint(_agent("Order 123 shipped", order="Q9Q9Q9")) != base
    assert exact_fingerprint(_agent("Order 123 was lost")) != base


def test_truncation_reasons() -> None:
    assert truncation_reason(_agent("done")) is None
    assert (
        truncation_reason(
            _agent(
                "done",
            ),
        )
        is None
    )
    cut = _t(
        Message(role="user", content="hi"),
        Message(role="assistant", content="Well", extra={"finish_reason": "length"}),
    )
    assert truncation_reason(cut) == "length"
    anthropic = _t(
        Message(role="user", content="hi"),
        Message(role="assistant", content="Well"),
        metadata={"stop_reason": "max_tokens"},
    )
    assert truncation_reason(anthropic) == "length"
    err = _t(
        Message(role="user", content="hi"),
        Message(role="assistant", content="ok"),
        outcome={"status": "error"},
    )
    assert truncation_reason(err) == "errored"
    assert truncation_reason(_t(Message(role="user", content="hi"))) == "no_assistant"
    dangling = _t(
        Message(role="user", content="hi"),
        Message(role="assistant", tool_calls=(ToolCall(id="1", name="search"),)),
        Message(role="tool", tool_call_id="1", content="results"),
    )
    assert truncation_reason(dangling) is None  # a conversation may end on a tool result
    handoff = _t(
        Message(role="user", content="hi"),
        Message(role="assistant", tool_calls=(ToolCall(id="1", name="transfer_to_human_agents"),)),
        Message(role="tool", tool_call_id="1", content="Transfer successful"),
    )
    assert truncation_reason(handoff) is None


def test_row_from_scored_overlays_declared_features() -> None:
    t = _agent("It shipped").with_updates(task_key="orders")
    result = RewardResult(reward="tool_calling", version="1", score=0.8, passed=True, threshold=0.5,
                          features={"right_tool": 1.0, "tool_calls": 7.0})  # fmt: skip
    s = ScoredRollout(
        rollout_id="r1", transcript=t, results=(result,), score=0.8, passed=True, reward_spec="tc"
    )
    row = RolloutRow.from_scored(s)
    assert (row.rollout_id, row.task_key, row.score, row.passed) == ("r1", "orders", 0.8, True)
    assert row.features["right_tool"] == 1.0 and row.features["tool_calls"] == 7.0
    assert row.features["assistant_turns"] == 2.0
    assert isinstance(row.digest, int)


def test_profile_scored_reads_transcripts() -> None:
    from rlstream.metrics import profile_scored

    rollouts = []
    for g in range(3):
        for i in range(4):
            t = _agent(f"reply {'long ' * (i + 1)}", order=f"ORD{g}X{i}").with_updates(
                task_key=f"task{g}", conversation_id=f"c{g}-{i}"
            )
            passed = i < 2
            res = RewardResult(
                reward="outcome", version="1", score=float(passed), passed=passed, threshold=0.5
            )
            rollouts.append(
                ScoredRollout(
                    rollout_id=f"r{g}-{i}",
                    transcript=t,
                    results=(res,),
                    score=float(passed),
                    passed=passed,
                    reward_spec="o",
                )
            )
    p = profile_scored(rollouts)
    assert (p.groups, p.graded_groups, p.mixed_groups) == (3, 3, 3)
    assert p.gradient_support == pytest.approx(1.0)
    assert p.hack_scan is not None and p.hack_scan.median_distinct == 4.0
