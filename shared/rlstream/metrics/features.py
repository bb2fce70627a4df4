"""Surface features of a transcript, text normalisation and content fingerprints.

The hack scan correlates reward with these features *within* a group; curation dedupes on
the fingerprint. Both live here so the metrics and the curator agree on what "the same
rollout" and "a long reply" mean.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

import orjson

from rlstream.transcript import Transcript

_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
# a token that mixes letters and digits (order ids, booking codes) or is long hex
_ID = re.compile(r"\b(?=[a-z0-9_#-]*\d)(?=[a-z0-9_#-]*[a-z])[a-z0-9_#-]{5,}\b|\b[0-9a-f]{12,}\b")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")

#: finish reasons that mean the model was cut off (OpenAI, Anthropic, vLLM spellings)
LENGTH_FINISH = frozenset({"length", "max_tokens", "max_output_tokens", "model_length"})
#: status / finish values that mean the rollout errored rather than ended
ERROR_STATUS = frozenset({"error", "errored", "exception", "crashed", "timeout", "aborted"})
#: a conversation may legitimately end on the result of a call whose name contains one of these
DEFAULT_TERMINAL_TOOLS = (
    "transfer",
    "escalat",
    "handoff",
    "hand_off",
    "end_conversation",
    "submit",
)


def normalise_text(text: str, *, mask: bool = True) -> str:
    """Lower-case, mask ids and numbers, collapse whitespace: what dedupe compares."""
    out = text.lower()
    if mask:
        out = _UUID.sub("<id>", out)
        out = _ID.sub("<id>", out)
        out = _NUMBER.sub("<n>", out)
    return _SPACE.sub(" ", out).strip()


def assistant_text(t: Transcript) -> str:
    """All assistant content joined; tool calls are not text."""
    return "\n".join(m.text for m in t.messages if m.role == "assistant" and m.content)


def tool_signature(t: Transcript) -> list[tuple[str, str]]:
    """(name, canonical JSON arguments) of every tool call, in order."""
    sig: list[tuple[str, str]] = []
    for call in t.tool_calls():
        args = call.arguments if call.arguments is not None else call.raw_arguments
        sig.append((call.name, orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()))
    return sig


def exact_fingerprint(t: Transcript, *, mask: bool = True) -> str:
    """sha256 of tool sequence + canonical args + normalised assistant text.

    ``mask=False`` keeps ids and numbers: two rollouts equal under that form are truly
    identical, so different rewards for them can only be judge noise.
    """
    return fingerprint_of(tool_signature(t), normalise_text(assistant_text(t), mask=mask))


def fingerprint_of(tools: list[tuple[str, str]], text: str) -> str:
    """:func:`exact_fingerprint` from a tool signature and already normalised text."""
    payload = orjson.dumps({"tools": tools, "text": text}, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(payload).hexdigest()


def fingerprint64(fingerprint: str) -> int:
    """A signed 64-bit integer from a hex fingerprint, cheap to keep per row in an array."""
    return int.from_bytes(bytes.fromhex(fingerprint[:16]), "big", signed=True)


def repetition(words: list[str], n: int = 3) -> float:
    """1 - unique n-grams / total n-grams (0 when the text has fewer than n words)."""
    total = len(words) - n + 1
    if total <= 0:
        return 0.0
    grams = {tuple(words[i : i + n]) for i in range(total)}
    return 1.0 - len(grams) / total


def _finish_values(t: Transcript) -> Iterable[object]:
    for src in (t.metadata, t.outcome):
        for key in ("finish_reason", "stop_reason"):
            yield src.get(key)
    for m in reversed(t.messages):
        if m.role == "assistant":
            yield m.extra.get("finish_reason")
            yield m.extra.get("stop_reason")
            break


def truncation_reason(
    t: Transcript, terminal_tools: tuple[str, ...] = DEFAULT_TERMINAL_TOOLS
) -> str | None:
    """Why a rollout is incomplete ("length", "errored", "no_final_assistant") or None.

    A rollout cut at max tokens or that errored says nothing about the policy's skill, and
    one that never reached a final assistant turn was not finished.
    """
    for value in _finish_values(t):
        if isinstance(value, str) and value.lower() in LENGTH_FINISH:
            return "length"
    for src in (t.metadata, t.outcome):
        if src.get("error") or src.get("errored"):
            return "errored"
        for key in ("status", "finish_reason"):
            value = src.get(key)
            if isinstance(value, str) and value.lower() in ERROR_STATUS:
                return "errored"
    body = [m for m in t.messages if m.role != "system"]
    if not any(m.role == "assistant" for m in body):
        return "no_final_assistant"
    last = body[-1]
    if last.role == "assistant":
        return None if (last.content or not last.tool_calls) else "no_final_assistant"
    if last.role == "tool":
        name = (last.name or "").lower()
        if not name and last.tool_call_id:
            name = next((c.name.lower() for c in t.tool_calls() if c.id == last.tool_call_id), "")
        if name and any(s in name for s in terminal_tools):
            return None
    return "no_final_assistant"


def surface_features(t: Transcript) -> dict[str, float]:
    """Features a reward could be gamed through: length, tools, turns, repetition.

    Per-tool indicators are ``tool:<name>`` = 1.0; tools not called are absent (read as 0).
    """
    text = assistant_text(t)
    words = _WORD.findall(text.lower())
    calls = t.tool_calls()
    feats: dict[str, float] = {
        "reply_length": float(len(text)),
        "tool_calls": float(len(calls)),
        "assistant_turns": float(sum(1 for m in t.messages if m.role == "assistant")),
        "repetition": repetition(words),
        "numbers": float(len(_NUMBER.findall(text))),
        "truncated": 1.0 if truncation_reason(t) is not None else 0.0,
    }
    for call in calls:
        feats[f"tool:{call.name}"] = 1.0
    return feats
