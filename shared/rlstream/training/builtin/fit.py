"""SFT rows cut to ``max_length`` from the left, before TRL sees them.

TRL truncates from the right and then drops rows left with no assistant token: on agent
logs (long system prompts, many tool results, the trained turn last) that drops every row
and the trainer dies on an empty sampler. Here a row too long for ``max_length`` keeps its
leading system messages and the longest run of recent messages that ends at the trained
(last) assistant turn and fits: whole messages only, so the chat template renders each one
as it would at inference and the assistant-only mask stays exact. A row that does not fit
even as system + trained turn is left out; if none fits, the run stops before loading the
model, saying what to change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlstream.errors import ConfigError

Messages = list[dict[str, Any]]


def token_count(tok: Any, messages: Messages) -> int:
    """Tokens of the rendered conversation, as TRL's SFT preparation tokenizes it."""
    out = tok.apply_chat_template(messages, tokenize=True, return_dict=True)
    return len(out["input_ids"])


def _starts(body: Messages, last: int) -> list[int]:
    """Where a kept suffix may begin: not on a tool result whose call was cut away."""
    return [i for i in range(last) if body[i]["role"] != "tool"] + [last]


def fit_messages(tok: Any, messages: Messages, max_length: int) -> tuple[Messages | None, int]:
    """(messages that fit or None, tokens of the shortest form: system + trained turn)."""
    n_head = next((i for i, m in enumerate(messages) if m["role"] != "system"), len(messages))
    head, body = messages[:n_head], messages[n_head:]
    last = max((i for i, m in enumerate(body) if m["role"] == "assistant"), default=None)
    if last is None:
        return None, token_count(tok, messages)
    body = body[: last + 1]
    if token_count(tok, head + body) <= max_length:
        return head + body, 0
    starts = _starts(body, last)
    shortest = token_count(tok, head + body[last:])
    if shortest > max_length:
        return None, shortest
    lo, hi = 0, len(starts) - 1  # starts[hi] fits; find the earliest start that fits
    while lo < hi:
        mid = (lo + hi) // 2
        if token_count(tok, head + body[starts[mid] :]) <= max_length:
            hi = mid
        else:
            lo = mid + 1
    return head + body[starts[lo] :], 0


def fit_sft_rows(
    tok: Any, rows: Sequence[dict[str, Any]], max_length: int
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Rows (TRL's ``messages`` column) that fit, and counts: whole, left_truncated,
    too_long. Raises :class:`ConfigError` when no row fits."""
    kept: list[dict[str, Any]] = []
    counts = {"whole": 0, "left_truncated": 0, "too_long": 0}
    needed: list[int] = []
    for row in rows:
        messages = list(row["messages"])
        fitted, need = fit_messages(tok, messages, max_length)
        if fitted is None:
            counts["too_long"] += 1
            needed.append(need)
            continue
        counts["whole" if len(fitted) == len(messages) else "left_truncated"] += 1
        kept.append({**row, "messages": fitted})
    if not kept:
        raise ConfigError(
            f"all {len(rows)} SFT rows are longer than --max-length {max_length} even after "
            "keeping only the system prompt and the trained turn; raise --max-length to at "
            f"least {min(needed, default=max_length)} (every row fits at "
            f"{max(needed, default=max_length)})"
        )
    return kept, counts
