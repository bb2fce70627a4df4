"""Builders for storage tests (a uniquely named module: test dirs have no __init__.py)."""

from __future__ import annotations

from rlstream.rewards.base import RewardResult
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message, SourceRef, Transcript


def make_transcript(
    cid: str,
    *,
    task_key: str = "task-a",
    agent: str | None = "support",
    redacted: bool = True,
    offset: int = 0,
) -> Transcript:
    return Transcript(
        conversation_id=cid,
        messages=(
            Message(role="user", content=f"question {task_key}"),
            Message(role="assistant", content=f"answer for {cid}"),
        ),
        task_key=task_key,
        agent=agent,
        redacted=redacted,
        source=SourceRef(
            kind="kafka", topic="rlstream.conversations.raw", partition=1, offset=offset
        ),
    )


def make_rollout(
    t: Transcript, *, score: float = 1.0, passed: bool = True, spec: str = "outcome@1"
) -> ScoredRollout:
    result = RewardResult(
        reward="outcome",
        version="1",
        score=score,
        passed=passed,
        threshold=0.5,
        components={"resolved": score},
        features={"length": float(len(t.messages))},
    )
    return ScoredRollout(
        rollout_id=ScoredRollout.make_id(t.conversation_id, spec),
        transcript=t,
        results=(result,),
        score=score,
        passed=passed,
        reward_spec=spec,
    )
