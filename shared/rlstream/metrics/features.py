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
    last = last_assistant_index(t)
    if last is not None:
        m = t.messages[last]
        yield m.extra.get("finish_reason")
        yield m.extra.get("stop_reason")


def _flagged(t: Transcript) -> bool:
    """A logged truncation flag on the rollout or on its last assistant turn."""
    last = last_assistant_index(t)
    sources = [t.metadata, t.outcome] + ([t.messages[last].extra] if last is not None else [])
    return any(src.get("truncated") is True for src in sources)


def last_assistant_index(t: Transcript) -> int | None:
    """Index of the last assistant turn that says or calls something (the turn trained)."""
    for i in range(len(t.messages) - 1, -1, -1):
        m = t.messages[i]
        if m.role == "assistant" and (m.content or m.tool_calls):
            return i
    return None


def truncation_reason(t: Transcript) -> str | None:
    """Why a rollout cannot be trained on ("length", "errored", "no_assistant") or None.

    Truncation is a cut-off assistant turn (finish/stop reason ``length`` / ``max_tokens``
    on the rollout or its last assistant turn) or a logged ``truncated: true`` flag. Real
    conversations end where they end: a trailing user thanks, stop marker or tool result
    is not truncation; the row trained stops at the last assistant turn.
    """
    for value in _finish_values(t):
        if isinstance(value, str) and value.lower() in LENGTH_FINISH:
            return "length"
    if _flagged(t):
        return "length"
    for src in (t.metadata, t.outcome):
        if src.get("error") or src.get("errored"):
            return "errored"
        for key in ("status", "finish_reason"):
            value = src.get(key)
            if isinstance(value, str) and value.lower() in ERROR_STATUS:
                return "errored"
    return "no_assistant" if last_assistant_index(t) is None else None


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
