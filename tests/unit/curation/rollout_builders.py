"""Builders for graded rollouts used by the curation tests."""

from __future__ import annotations

import random
import zlib
from typing import Any

from rlstream.rewards import RewardResult
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message, SourceRef, ToolCall, Transcript

_LETTERS = random.Random(1)
WORDS = [
    "".join(_LETTERS.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6)) for _ in range(300)
]


def text(seed: int, words: int = 24) -> str:
    """Distinct-looking prose (random words) so unrelated rollouts are not near duplicates."""
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words))


def rollout(
    task: str,
    i: int,
    passed: bool,
    *,
    reply: str | None = None,
    score: float | None = None,
    tool: str | None = "lookup",
    policy: str = "pv1",
    metadata: dict[str, Any] | None = None,
    final: bool = True,
    label: Any = None,
) -> ScoredRollout:
    conv = f"{task}-c{i}"
    msgs = [
        Message(role="system", content="You are a support agent."),
        Message(role="user", content=f"Help me with {task}."),
    ]
    if tool:
        msgs += [
            Message(
                role="assistant",
                tool_calls=(ToolCall(id=f"call{i}", name=tool, arguments={"q": task}),),
            ),
            Message(role="tool", tool_call_id=f"call{i}", name=tool, content="ok"),
        ]
    if final:
        msgs.append(
            Message(
                role="assistant",
                content=reply if reply is not None else text(zlib.crc32(f"{task}/{i}".encode())),
            )
        )
    t = Transcript(
        conversation_id=conv,
        messages=tuple(msgs),
        task_key=task,
        policy_version=policy,
        metadata=metadata or {},
        label=label,
        source=SourceRef(kind="file", file="logs.jsonl", line=i + 1),
    )
    s = score if score is not None else (1.0 if passed else 0.0)
    result = RewardResult(reward="outcome", version="1.2", score=s, passed=passed, threshold=0.5)
    return ScoredRollout(
        rollout_id=ScoredRollout.make_id(conv, "outcome"),
        transcript=t,
        results=(result,),
        score=s,
        passed=passed,
        reward_spec="outcome",
    )


def group(task: str, n: int, passes: int, start: int = 0) -> list[ScoredRollout]:
    return [rollout(task, start + i, i < passes) for i in range(n)]


def call(name: str, **args: Any) -> ToolCall:
    return ToolCall(id=f"c-{name}", name=name, arguments=args)


def agent_rollout(
    cid: str, passed: bool, steps: list[Any], task: str = "t1", user: str = "hi"
) -> ScoredRollout:
    """steps: a ToolCall (a call turn, answered by a tool result), a str (a reply, answered
    by a user turn)."""
    msgs = [Message(role="system", content="sys"), Message(role="user", content=user)]
    for s in steps:
        if isinstance(s, ToolCall):
            msgs.append(Message(role="assistant", tool_calls=(s,)))
            msgs.append(Message(role="tool", tool_call_id=s.id, name=s.name, content=f"ok {cid}"))
        else:
            msgs.append(Message(role="assistant", content=s))
            msgs.append(Message(role="user", content=f"more {cid}"))
    t = Transcript(conversation_id=cid, messages=tuple(msgs), task_key=task)
    return ScoredRollout(
        rollout_id=cid, transcript=t, results=(), score=float(passed), passed=passed,
        reward_spec="outcome",
    )  # fmt: skip
