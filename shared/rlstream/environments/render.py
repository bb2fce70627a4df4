"""Environment messages as the text a chat template puts between two assistant turns.

Both training adapters concatenate tokens: the model's own turn (ending at its end-of-turn
token) then the environment's answer then the next generation prompt. That middle piece is
what the model's chat template renders for the answer, found by rendering a short
conversation with and without it and cutting at the end-of-turn token (TRL does the same
for tool results); it needs a template that renders earlier messages the same whatever
follows (prefix-preserving), which ChatML is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from rlstream.errors import ConfigError
from rlstream.transcript import Message

#: ``(messages, add_generation_prompt) -> text``: a tokenizer's apply_chat_template
Render = Callable[[list[dict[str, Any]], bool], str]


def message_dict(m: Message) -> dict[str, Any]:
    """One fixed dict shape per message (what chat templates and Arrow columns read)."""
    calls = [
        {
            "type": "function",
            "function": {"name": c.name, "arguments": orjson.dumps(c.arguments or {}).decode()},
        }
        for c in m.tool_calls
    ]
    return {
        "role": m.role,
        "content": m.content or "",
        "tool_calls": calls,
        "tool_call_id": m.tool_call_id or "",
        "name": m.name or "",
    }


def template_render(tokenizer: Any) -> Render:
    """A tokenizer's own template as a :data:`Render`."""

    def render(messages: list[dict[str, Any]], generation_prompt: bool) -> str:
        text = tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=generation_prompt
        )
        return str(text)

    return render


_PROBE = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "u"},
    {"role": "assistant", "content": "a"},
]


def feedback_text(render: Render, eos: str, messages: Sequence[Message]) -> str:
    """The text after the model's end-of-turn token up to and including the next
    generation prompt, for ``messages`` (tool results or a user turn)."""
    before = render(list(_PROBE), False)
    after = render([*_PROBE, *(message_dict(m) for m in messages)], True)
    cut = before.rfind(eos) + len(eos) if eos and eos in before else len(before)
    if not after.startswith(before[:cut]):
        raise ConfigError("the chat template does not preserve the conversation prefix")
    return after[cut:]
