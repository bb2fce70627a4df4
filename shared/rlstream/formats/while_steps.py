"""While rows' steps <-> rlstream messages: the one walk both directions share.

A While row (``row-v1.json``, shipped in the ``whileai`` package) keeps a rollout as an
optional ``opener`` (the agent speaks first), a ``prompt`` (the first user turn), ``steps``
(``{user}``, ``{tool, arguments, result, text?}``, ``{text}``) and ``final_text``.
:func:`build` turns those into messages; :func:`walk` turns messages back into them. The
row parser and emitter (:mod:`rlstream.formats.while_rows`) check one against the other, so
whatever a walk cannot say rides along beside the row instead of being lost.

Markers in ``Message.extra`` keep what the message shape alone cannot tell:

* ``while_final``: an assistant message that is only the row's ``final_text`` (not a step);
* ``while_tool_text``: one tool step that also carried ``text`` (whileai writes these;
  without the marker the walk writes a ``{text}`` step and then the ``{tool}`` step);
* ``while_result``: a tool message whose content is a JSON-encoded non-string ``result``.

A step's other keys (``logprob``, ``n_tokens``, ``truncated``, ...) live in the message's
``extra`` under their own names, so ``truncated`` reaches curation's truncation check.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any, NamedTuple

import orjson
from pydantic import JsonValue

from rlstream.formats._common import jsonable
from rlstream.transcript.model import Message, ToolCall

FINAL = "while_final"
TOOL_TEXT = "while_tool_text"
RESULT_JSON = "while_result"
#: step key: this tool call belongs to the previous step's assistant turn (parallel calls,
#: or a turn that spoke and called); whileai ignores unknown step keys
SAME_TURN = "rlstream_turn"
MARKERS = frozenset({FINAL, TOOL_TEXT, RESULT_JSON})
#: message extra keys that never become step keys (they would change the step's kind)
_RESERVED = frozenset({"user", "tool", "text", "arguments", "result", SAME_TURN}) | MARKERS
_TOOL_KEYS = frozenset({"tool", "arguments", "result", "text", SAME_TURN})


class Parts(NamedTuple):
    """The four row fields a rollout's messages are written as."""

    opener: str
    prompt: str
    steps: list[dict[str, Any]]
    final_text: str


def _extras(step: dict[str, Any], structural: frozenset[str]) -> dict[str, JsonValue] | None:
    extra = {k: jsonable(v) for k, v in step.items() if k not in structural}
    return None if _RESERVED.intersection(extra) else extra


def _result_message(name: str, result: Any) -> Message | None:
    if isinstance(result, str):
        return Message(role="tool", name=name, content=result)
    try:
        text = orjson.dumps(result).decode()
    except (TypeError, orjson.JSONEncodeError):
        return None
    return Message(role="tool", name=name, content=text, extra={RESULT_JSON: True})


def build(opener: Any, prompt: Any, steps: Any, final_text: Any) -> list[Message] | None:
    """Messages for a row's parts; None when a part has a shape the walk cannot rebuild."""
    if not all(isinstance(v, str) for v in (opener, prompt, final_text)):
        return None
    if not isinstance(steps, list):
        return None
    out: list[Message] = []
    if opener:
        out.append(Message(role="assistant", content=opener))
    if prompt:
        out.append(Message(role="user", content=prompt))
    pending: list[Message] = []  # tool results of the open assistant turn
    turn_open = False
    for step in steps:
        if not isinstance(step, dict):
            return None
        if "user" in step:
            extra = _extras(step, frozenset({"user"}))
            if extra is None or not isinstance(step["user"], str):
                return None
            out.extend(pending)
            pending, turn_open = [], False
            out.append(Message(role="user", content=step["user"], extra=extra))
        elif "tool" in step:
            extra = _extras(step, _TOOL_KEYS)
            name, text = step["tool"], step.get("text")
            if extra is None or not isinstance(name, str) or "arguments" not in step:
                return None
            if text is not None and not isinstance(text, str):
                return None
            call = ToolCall(name=name, arguments=jsonable(step["arguments"]))
            if step.get(SAME_TURN) == "same":
                if not turn_open or text is not None or extra or out[-1].role != "assistant":
                    return None
                last = out[-1]
                out[-1] = last.model_copy(update={"tool_calls": (*last.tool_calls, call)})
            else:
                if SAME_TURN in step:
                    return None
                out.extend(pending)
                pending = []
                if text is not None:
                    extra[TOOL_TEXT] = True
                out.append(Message(role="assistant", content=text, tool_calls=(call,), extra=extra))
            turn_open = True
            if "result" in step:
                result = _result_message(name, step["result"])
                if result is None:
                    return None
                pending.append(result)
        elif "text" in step:
            extra = _extras(step, frozenset({"text"}))
            if extra is None or not isinstance(step["text"], str):
                return None
            out.extend(pending)
            pending, turn_open = [], True
            out.append(Message(role="assistant", content=step["text"], extra=extra))
        else:
            return None
    out.extend(pending)
    if final_text and final_text != _last_said(out):
        out.append(Message(role="assistant", content=final_text, extra={FINAL: True}))
    return out


def _last_said(messages: Sequence[Message]) -> str | None:
    for m in reversed(messages):
        if m.role == "assistant" and m.content:
            return m.content
    return None


def _promotable(m: Message) -> dict[str, Any]:
    return {k: v for k, v in m.extra.items() if k not in _RESERVED}


def _tool_step(call: ToolCall, result: Message | None) -> dict[str, Any]:
    step: dict[str, Any] = {"tool": call.name, "arguments": call.arguments}
    if result is not None:
        value: Any = result.content or ""
        if result.extra.get(RESULT_JSON) is True:
            # redaction or an edit may have broken the JSON: then the text is the result
            with contextlib.suppress(orjson.JSONDecodeError):
                value = orjson.loads(value)
        step["result"] = value
    return step


def _assistant_steps(m: Message, results: list[Message]) -> list[dict[str, Any]]:
    calls = m.tool_calls
    extras = _promotable(m)
    if m.extra.get(TOOL_TEXT) is True and len(calls) == 1 and m.content is not None:
        step = _tool_step(calls[0], results[0] if results else None)
        return [{**step, "text": m.content, **extras}]
    steps: list[dict[str, Any]] = []
    if m.content is not None:
        steps.append({"text": m.content, **extras})
    for k, call in enumerate(calls):
        step = _tool_step(call, results[k] if k < len(results) else None)
        if steps:
            step[SAME_TURN] = "same"
        else:
            step.update(extras)
        steps.append(step)
    return steps


def walk(messages: Sequence[Message]) -> Parts | None:
    """The row parts of non-system messages; None for a shape steps cannot hold (a tool
    result no call precedes, a system message)."""
    ms, n, i = list(messages), len(messages), 0
    opener = ""
    first = ms[0] if ms else None
    if (
        first is not None
        and n > 1
        and first.role == "assistant"
        and first.content
        and not first.tool_calls
        and ms[1].role == "user"
    ):
        opener, i = first.content, 1
    prompt = ""
    if i < n and ms[i].role == "user" and ms[i].content:
        prompt, i = ms[i].content or "", i + 1
    steps: list[dict[str, Any]] = []
    final: str | None = None
    while i < n:
        m = ms[i]
        if m.role == "user":
            steps.append({"user": m.content or "", **_promotable(m)})
            i += 1
        elif m.role == "assistant" and m.tool_calls:
            j = i + 1
            results: list[Message] = []
            while j < n and ms[j].role == "tool" and len(results) < len(m.tool_calls):
                results.append(ms[j])
                j += 1
            steps.extend(_assistant_steps(m, results))
            i = j
        elif m.role == "assistant":
            if m.extra.get(FINAL) is True and i == n - 1 and m.content:
                final = m.content
            else:
                steps.append({"text": m.content or "", **_promotable(m)})
            i += 1
        else:
            return None
    if final is None:
        final = _last_said(ms) or ""
    return Parts(opener, prompt, steps, final)


def conversation(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The row's ``messages`` as whileai derives them from prompt + steps
    (``whileai.simulations.data.conversation``, same rules): the value a row carries when
    its ``messages`` were derived, so the parser need not keep them."""
    messages: list[dict[str, Any]] = []
    opener = str(row.get("opener") or "")
    if opener:
        messages.append({"role": "assistant", "content": opener})
    first = str(row.get("prompt") or "")
    if first:
        messages.append({"role": "user", "content": first})
    for step in row.get("steps") or []:
        if not isinstance(step, dict):
            continue
        if step.get("user"):
            messages.append({"role": "user", "content": str(step["user"])})
            continue
        spoken = str(step.get("text") or "")
        if step.get("tool"):
            call = {"name": step.get("tool"), "arguments": step.get("arguments") or {}}
            messages.append({"role": "assistant", "content": spoken, "tool_calls": [call]})
            result = step.get("result")
            content = result if isinstance(result, str) else json.dumps(result, default=str)
            messages.append({"role": "tool", "name": step.get("tool"), "content": content})
        elif spoken:
            messages.append({"role": "assistant", "content": spoken})
    final = str(row.get("final_text") or "")
    failed = final.startswith("<agent error")
    while len(messages) > 1 and messages[-1].get("role") == "user" and not failed:
        messages.pop()
    already = {
        str(m.get("content") or "")
        for m in messages
        if m.get("role") == "assistant" and str(m.get("content") or "").strip()
    }
    last = messages[-1] if messages else {}
    if final and final in already:
        return messages
    if final and last.get("role") == "assistant":
        if not str(last.get("content") or "").strip():
            last["content"] = final
    elif final:
        messages.append({"role": "assistant", "content": final})
    return messages
