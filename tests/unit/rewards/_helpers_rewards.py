"""Small transcript builders for the reward tests."""

from __future__ import annotations

from typing import Any

from rlstream.transcript import Message, ToolCall, Transcript


def convo(*turns: tuple[str, Any], **fields: Any) -> Transcript:
    """``("user", "text")``, ``("assistant", "text")``, ``("call", [(name, args), ...])``,
    ``("tool", (name, content))``."""
    msgs: list[Message] = []
    n = 0
    for role, value in turns:
        if role == "call":
            calls = []
            for name, args in value:
                n += 1
                calls.append(ToolCall(id=f"c{n}", name=name, arguments=args))
            msgs.append(Message(role="assistant", tool_calls=tuple(calls)))
        elif role == "tool":
            name, content = value
            msgs.append(Message(role="tool", name=name, content=content, tool_call_id=f"c{n}"))
        else:
            msgs.append(Message(role=role, content=value))
    return Transcript(
        conversation_id=fields.pop("conversation_id", "conv-1"), messages=tuple(msgs), **fields
    )
