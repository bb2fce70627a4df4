"""The per-group scorer (leave-one-out vote counts) gives exactly what the reward gives with
``context.group`` = the other peers, including duplicates that share a conversation id."""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
import pytest
from _helpers_rewards import convo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlstream.errors import MissingContextError
from rlstream.rewards._consensus import Votes, consensus
from rlstream.rewards.base import RewardContext
from rlstream.rewards.tool_calling import ToolCallingReward
from rlstream.rewards.toolcalls import Call, extract_calls, is_free_text
from rlstream.transcript import Transcript

pytestmark = pytest.mark.unit

CALLS = [
    ("lookup_order", {"order_id": "ORD-1"}),
    ("lookup_order", {"order_id": "ORD-2"}),
    ("issue_refund", {"order_id": "ORD-1", "amount": 5}),
    ("issue_refund", {"order_id": "ORD-1", "amount": "5.0"}),
    ("issue_refund", {"amount": 7}),
    ("escalate", {"reason": "customer wants a manager"}),
    ("escalate", {"reason": "late", "order_id": "ORD-1"}),
]
rollout = st.tuples(
    st.sampled_from(["a", "b", "c", "d", "e"]),  # conversation ids repeat: re-logged duplicates
    st.lists(st.sampled_from(CALLS), max_size=4),
)


def _group(spec: list[tuple[str, list[tuple[str, Any]]]]) -> list[Transcript]:
    return [
        convo(("user", "help"), ("call", calls), ("assistant", "done"), conversation_id=cid)
        for cid, calls in spec
    ]


def _naive(reward: ToolCallingReward, t: Transcript, peers: list[Transcript]) -> Any:
    others = tuple(p for p in peers if p.conversation_id != t.conversation_id)
    try:
        return reward(t, RewardContext(group=others))
    except MissingContextError as exc:
        return str(exc)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    peers=st.lists(rollout, max_size=7),
    outsiders=st.lists(rollout, max_size=3),
    ordered=st.booleans(),
)
def test_group_scorer_equals_reward_with_the_other_peers(
    peers: list[Any], outsiders: list[Any], ordered: bool
) -> None:
    reward = ToolCallingReward(ordered=ordered)
    group = _group(peers)
    scorer = reward.group_scorer(group)
    for t in [*group, *_group(outsiders)]:
        try:
            got: Any = scorer(t, RewardContext())
        except MissingContextError as exc:
            got = str(exc)
        assert got == _naive(reward, t, group)


def _plain_consensus(peer_calls: list[list[Call]]) -> list[tuple[str, dict[str, Any]]]:
    """The rule written out directly, one peer list at a time (the pre-Votes code)."""
    by_names: dict[tuple[str, ...], list[list[Call]]] = {}
    for calls in peer_calls:
        uniq = {c.key: c for c in calls}
        chosen = [uniq[k] for k in dict.fromkeys(c.key for c in calls)]
        by_names.setdefault(tuple(c.name for c in chosen), []).append(chosen)
    names, members = min(by_names.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ref = []
    for pos, name in enumerate(names):
        votes: dict[str, Counter[str]] = {}
        values: dict[str, Any] = {}
        for chosen in members:
            for k, v in chosen[pos].args.items():
                enc = orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode()
                votes.setdefault(k, Counter())[enc] += 1
                values[enc] = v
        args = {}
        for k, counter in votes.items():
            enc, n = min(counter.items(), key=lambda kv: (-kv[1], kv[0]))
            if n * 2 > len(members) and not is_free_text(values[enc]):
                args[k] = values[enc]
        ref.append((name, args))
    return ref


@settings(max_examples=150, deadline=None)
@given(peers=st.lists(rollout, min_size=1, max_size=8))
def test_leave_one_out_votes_equal_a_fresh_consensus(peers: list[Any]) -> None:
    group = _group(peers)
    calls = [extract_calls(t) for t in group]
    votes = Votes(calls, [t.conversation_id for t in group])
    assert votes.reference() == consensus(calls) == _plain_consensus(calls)
    for cid in {t.conversation_id for t in group}:
        rest = [c for c, t in zip(calls, group, strict=True) if t.conversation_id != cid]
        assert votes.reference(cid) == (_plain_consensus(rest) if rest else None)


def test_explicit_reference_wins_over_the_group() -> None:
    group = _group([("a", [CALLS[0]]), ("b", [CALLS[0]])])
    me = _group([("c", [CALLS[1]])])[0]
    scorer = ToolCallingReward().group_scorer(group)
    assert not scorer(me, RewardContext()).passed
    ref = [{"name": "lookup_order", "arguments": {"order_id": "ORD-2"}}]
    assert scorer(me, RewardContext(reference=ref)).passed
