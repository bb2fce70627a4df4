"""The rollout model: one id and one task key, both pinned to their single definition."""

from __future__ import annotations

import hashlib

import pytest

from rlstream.rewards import RewardResult
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message, Transcript

pytestmark = pytest.mark.unit


def _rollout(t: Transcript, spec: str = "spec-1") -> ScoredRollout:
    r = RewardResult(reward="outcome", version="1", score=1.0, passed=True, threshold=0.5)
    return ScoredRollout(
        rollout_id=ScoredRollout.make_id(t.conversation_id, spec),
        transcript=t,
        results=(r,),
        score=1.0,
        passed=True,
        reward_spec=spec,
    )


def test_rollout_id_is_deterministic_and_spec_sensitive() -> None:
    a = ScoredRollout.make_id("c1", "spec-1")
    assert a == ScoredRollout.make_id("c1", "spec-1")
    assert a != ScoredRollout.make_id("c1", "spec-2")
    assert a != ScoredRollout.make_id("c2", "spec-1")
    # the stored ids depend on these exact bytes: changing them orphans every stored rollout
    assert a == hashlib.sha256(b"c1\x00spec-1").hexdigest()[:32]


def test_task_key_is_the_transcripts_group_key() -> None:
    msgs = (Message(role="user", content="hi"),)
    keyed = Transcript(conversation_id="c1", messages=msgs, task_key="orders")
    logged = Transcript(conversation_id="c2", messages=msgs, metadata={"task_id": 7})
    bare = Transcript(conversation_id="c3", messages=msgs)
    for t, want in ((keyed, "orders"), (logged, "task_id:7"), (bare, "c3")):
        r = _rollout(t)
        assert r.task_key == t.group_key == want
        assert r.conversation_id == t.conversation_id
