"""Turn-level references on hand-built groups: branching, loops, no passing rollout,
identical states reached by different conversations, and pairs that never cross tasks or
prefixes."""

from __future__ import annotations

import orjson
import pytest
from tests.unit.curation.rollout_builders import agent_rollout as rollout
from tests.unit.curation.rollout_builders import call as _call

from rlstream.curation.turn_refs import (
    REPLY,
    coverage,
    derive_references,
    first_divergence,
    score_turns,
    turns_of,
)
from rlstream.curation.turn_rows import (
    dpo_turn_rows,
    heldout_turn_rows,
    sft_turn_rows,
    turn_profile,
)

pytestmark = pytest.mark.unit


GET = _call("get_user", user_id="u1")
CANCEL = _call("cancel", rid="R1")
CANCEL_WRONG = _call("cancel", rid="R2")
REFUND = _call("refund", rid="R1")


def test_states_are_call_histories_and_replies_keep_the_state() -> None:
    r = rollout("a", True, ["hello", GET, "ok?", CANCEL])
    turns = turns_of(r.transcript)
    assert [len(t.state) for t in turns] == [0, 0, 1, 1]
    assert turns[0].action == (REPLY,) and turns[2].action == (REPLY,)
    assert turns[1].state == turns[0].state


def test_first_divergence_marks_the_wrong_turn_and_nothing_after() -> None:
    group = [
        rollout("p", True, [GET, CANCEL, "done"]),
        rollout("f", False, [GET, CANCEL_WRONG, "done"]),
    ]
    refs = derive_references(group)
    scores = score_turns(group[1], refs)
    assert [s.source for s in scores] == ["reference_match", "divergence", "after_divergence"]
    assert [s.score for s in scores] == [1.0, 0.0, None]
    assert first_divergence(group[1], refs) is not None
    assert all(s.source == "passing_rollout" for s in score_turns(group[0], refs))


def test_branching_passing_paths_are_both_references() -> None:
    group = [
        rollout("p1", True, [GET, CANCEL]),
        rollout("p2", True, [GET, REFUND]),
        rollout("f", False, [GET, REFUND, CANCEL_WRONG]),
    ]
    refs = derive_references(group)
    assert len(refs.actions(turns_of(group[0].transcript)[1].state)) == 2
    # refund is a reference at that state; the failing rollout goes wrong after it, where
    # no passing rollout was: no reference, not a divergence
    assert [s.source for s in score_turns(group[2], refs)] == [
        "reference_match", "reference_match", "no_reference",
    ]  # fmt: skip


def test_loops_repeat_calls_into_new_states() -> None:
    group = [
        rollout("p", True, [GET, CANCEL]),
        rollout("f", False, [GET, GET, GET, CANCEL]),
    ]
    refs = derive_references(group)
    assert [s.source for s in score_turns(group[1], refs)] == [
        "reference_match", "divergence", "after_divergence", "after_divergence",
    ]  # fmt: skip


def test_no_passing_rollout_means_no_reference() -> None:
    group = [rollout("f1", False, [GET, CANCEL]), rollout("f2", False, [CANCEL])]
    refs = derive_references(group)
    assert refs.table == {}
    assert {s.source for r in group for s in score_turns(r, refs)} == {"no_reference"}
    assert dpo_turn_rows(group, refs) == [] and heldout_turn_rows(group, refs) == []
    cov = coverage([group])
    assert cov.groups_with_pass == 0 and cov.failing_turns_scored == 0


def test_same_state_reached_by_different_conversations_is_one_state() -> None:
    group = [
        rollout("p1", True, ["hello there", GET, CANCEL], user="I want to cancel"),
        rollout("p2", True, [GET, CANCEL], user="cancel R1 please, I am u1"),
    ]
    refs = derive_references(group)
    state = turns_of(group[0].transcript)[2].state
    assert turns_of(group[1].transcript)[1].state == state
    assert [e.rollout_id for e in refs.table[state][(turns_of(group[0].transcript)[2].action)]] == [
        "p1", "p2",
    ]  # fmt: skip


def test_arguments_are_compared_after_normalisation() -> None:
    spaced = _call("get_user", user_id="  U1 ")
    other = _call("get_user", user_id="u2")
    group = [
        rollout("p", True, [GET, CANCEL]),
        rollout("f1", False, [spaced, CANCEL_WRONG]),
        rollout("f2", False, [other, CANCEL]),
    ]
    refs = derive_references(group)
    assert score_turns(group[1], refs)[0].source == "reference_match"
    assert score_turns(group[2], refs)[0].source == "divergence"


def test_groups_of_several_tasks_are_refused() -> None:
    with pytest.raises(ValueError, match="task keys"):
        derive_references([rollout("a", True, [GET]), rollout("b", True, [GET], task="t2")])


def test_dpo_pairs_share_task_and_prefix() -> None:
    group = [
        rollout("p1", True, [GET, CANCEL, "done"]),
        rollout("p2", True, ["hi", GET, CANCEL]),
        rollout("f1", False, [GET, CANCEL_WRONG]),
        rollout("f2", False, [REFUND]),
        rollout("f3", False, [GET, CANCEL]),  # same calls, failed for another reason
    ]
    refs = derive_references(group)
    rows = dpo_turn_rows(group, refs)
    assert [r["rejected_rollout_id"] for r in rows] == ["f1", "f2"]
    for row in rows:
        rejected = next(r for r in group if r.rollout_id == row["rejected_rollout_id"])
        chosen = next(r for r in group if r.rollout_id == row["chosen_rollout_id"])
        assert chosen.passed and not rejected.passed and chosen.task_key == rejected.task_key
        n = len(row["prompt"])
        assert row["rejected"][0] == orjson.loads(orjson.dumps(row["rejected"][0]))
        assert row["chosen"][0]["tool_calls"] != row["rejected"][0]["tool_calls"]
        # the same prefix: the rejected side's own history up to the diverging turn
        assert [m["role"] for m in row["prompt"]][-1] in {"user", "tool"}
        assert n == turns_of(rejected.transcript)[row["turn"]].message_index
    f1 = rows[0]
    assert f1["chosen"][0]["tool_calls"][0]["function"]["name"] == "cancel"
    assert orjson.loads(f1["chosen"][0]["tool_calls"][0]["function"]["arguments"]) == {"rid": "R1"}


def test_sft_rows_train_one_turn_each_and_heldout_rows_carry_the_calls() -> None:
    group = [rollout("p", True, [GET, CANCEL, "done"]), rollout("f", False, [REFUND])]
    refs = derive_references(group)
    sft = sft_turn_rows(group)
    assert len(sft) == 3 and all(r["rollout_id"] == "p" for r in sft)
    assert all(sum(r["loss_mask"]) == 1 and r["loss_mask"][-1] == 1 for r in sft)
    held = heldout_turn_rows(group, refs)
    assert [orjson.loads(r["label"])["expected_tool_calls"] for r in held] == [
        [{"name": "get_user", "arguments": {"user_id": "u1"}}],
        [{"name": "cancel", "arguments": {"rid": "R1"}}],
    ]
    assert all(r["prompt"][-1]["role"] in {"user", "tool"} for r in held)
    prof = turn_profile([group])
    assert (prof.states, prof.states_with_divergence, prof.dpo_rows) == (3, 1, 1)
    assert prof.gradient_support == pytest.approx(1 / 3)
