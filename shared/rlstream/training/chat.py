"""The chat template the builtin backend trains with (and saves next to the adapter).

SmolLM2's own template is plain ChatML: it drops ``tool_calls`` and has no
``{% generation %}`` markers, so TRL cannot mask the loss to assistant turns and the model
would never see the calls it should learn. This template is the same ChatML (same default
system prompt, so prompts render byte-identically) plus:

- assistant turns wrapped in ``{% generation %}`` ... ``{% endgeneration %}``, the
  ``<|im_end|>`` included, so SFT learns to stop;
- tool calls rendered as fenced JSON (```` ```json {"name": ..., "arguments": ...} ``` ````)
  after the assistant text: the form rlstream's rewards already read from assistant text
  (``rlstream.rewards.toolcalls``), so a trained model's output grades with no extra parser;
- tool results as ``tool`` turns.

Any other model keeps its own template when it already has generation markers.
"""

from __future__ import annotations

from typing import Any

import orjson

DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

CHATML_TOOLS_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if loop.first and message['role'] != 'system' -%}"
    "{{ '<|im_start|>system\\n" + DEFAULT_SYSTEM + "<|im_end|>\\n' }}"
    "{%- endif -%}"
    "{%- if message['role'] == 'assistant' -%}"
    "{{ '<|im_start|>assistant\\n' }}"
    "{%- generation -%}"
    "{{ message['content'] or '' }}"
    "{%- for call in message.get('tool_calls') or [] -%}"
    "{%- set fn = call['function'] if call.get('function') else call -%}"
    "{%- if (message['content'] or '') or not loop.first -%}{{ '\\n' }}{%- endif -%}"
    "{{ '```json\\n{\"name\": ' + (fn['name'] | tojson) + ', \"arguments\": ' }}"
    "{%- if fn['arguments'] is string -%}{{ fn['arguments'] }}"
    "{%- else -%}{{ fn['arguments'] | tojson }}{%- endif -%}"
    "{{ '}\\n```' }}"
    "{%- endfor -%}"
    "{{ '<|im_end|>' }}"
    "{%- endgeneration -%}"
    "{{ '\\n' }}"
    "{%- else -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') + '<|im_end|>\\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)


def training_template(tokenizer: Any) -> str:
    """The template to train with: the model's own when it marks assistant turns, else ours."""
    own = tokenizer.chat_template
    if isinstance(own, dict):
        own = own.get("default")
    if isinstance(own, str) and "generation" in own and "endgeneration" in own:
        return own
    return CHATML_TOOLS_TEMPLATE


def normalise_message(m: dict[str, Any]) -> dict[str, Any]:
    """One fixed shape per message (Arrow needs one schema per column): role, content,
    tool_calls (name + JSON-string arguments), tool_call_id, name."""
    calls = []
    for c in m.get("tool_calls") or ():
        fn = c.get("function") or c
        args = fn.get("arguments")
        if not isinstance(args, str):
            args = orjson.dumps(args if args is not None else {}).decode()
        calls.append({"function": {"name": str(fn.get("name", "")), "arguments": args}})
    return {
        "role": str(m.get("role", "user")),
        "content": str(m.get("content") or ""),
        "tool_calls": calls,
        "tool_call_id": str(m.get("tool_call_id") or ""),
        "name": str(m.get("name") or ""),
    }


def assistant_text(message: dict[str, Any]) -> str:
    """An assistant message as the template renders it inside its generation block (without
    ``<|im_end|>``): the text a model trained with it emits, tool calls as fenced JSON."""
    m = normalise_message(message)
    parts = [m["content"]] if m["content"] else []
    for call in m["tool_calls"]:
        fn = call["function"]
        name = orjson.dumps(fn["name"]).decode()
        parts.append(f'```json\n{{"name": {name}, "arguments": {fn["arguments"]}}}\n```')
    return "\n".join(parts)
