"""Task key resolution: explicit id, else normalised-opener hash, else near-dup merge.

Real multi-trial logs rephrase the opener every trial (tau-bench airline: 200 rows form 193
groups by raw first message), so an explicit logged id always wins; the opener hash is the
fallback and the near-duplicate merge an opt-in for logs that carry no id at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rlstream.fastmodel import replaced
from rlstream.formats import dumps_sorted, get_path
from rlstream.pii.detectors import find_spans
from rlstream.pii.redact import pii_free_id
from rlstream.taskkey.normalize import normalise_text, short_hash, toolset_hash
from rlstream.taskkey.opener_index import OpenerIndex
from rlstream.transcript.model import TaskKeyRule, Transcript

DEFAULT_FIELDS: tuple[str, ...] = ("task_id", "intent", "scenario_id", "prompt_id")


def _scalar(value: Any) -> str | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    text = str(value) if isinstance(value, str | int | float) else dumps_sorted(value).decode()
    # a task id read from the raw record must not smuggle PII into keys and topic names
    return pii_free_id(text) if find_spans(text) else text


def explicit_key(
    t: Transcript,
    raw: Mapping[str, Any] | None = None,
    field: str | None = None,
    defaults: Sequence[str] = DEFAULT_FIELDS,
) -> str | None:
    """``"<field>:<value>"`` from a configured dotted path or the default id fields."""
    if field:
        for source in (raw, t.metadata, t.outcome):
            if source is not None:
                value = _scalar(get_path(source, field))
                if value is not None:
                    return f"{field}:{value}"
    for name in defaults:
        for source in (t.metadata, t.outcome):
            value = _scalar(source.get(name))
            if value is not None:
                return f"{name}:{value}"
    return None


def opener_parts(t: Transcript) -> tuple[str, str]:
    """(context hash of system prompt + tool set, normalised first user message)."""
    system = normalise_text(t.system_prompt, redacted=t.redacted)
    context = short_hash(system, toolset_hash(t.tools))
    return context, normalise_text(t.first_user_message, redacted=t.redacted)


def opener_key(t: Transcript) -> str:
    context, user = opener_parts(t)
    return "opener:" + short_hash(context, user)


class TaskKeyResolver:
    """Resolves and records a transcript's task key; stateful only when merging near-dups."""

    def __init__(
        self,
        field: str | None = None,
        near_dup_merge: bool = False,
        threshold: float = 0.7,
        index: OpenerIndex | None = None,
    ) -> None:
        self.field = field
        self.index = (
            index
            if index is not None
            else (OpenerIndex(threshold=threshold) if near_dup_merge else None)
        )

    def resolve(
        self, t: Transcript, raw: Mapping[str, Any] | None = None
    ) -> tuple[str, TaskKeyRule]:
        key = explicit_key(t, raw, self.field)
        if key is not None:
            return key, "explicit"
        context, user = opener_parts(t)
        key = "opener:" + short_hash(context, user)
        if self.index is None:
            return key, "opener"
        merged = self.index.add(key, user, context)
        return merged, ("opener" if merged == key else "merged")

    def apply(self, t: Transcript, raw: Mapping[str, Any] | None = None) -> Transcript:
        key, rule = self.resolve(t, raw)
        return replaced(t, {"task_key": key, "task_key_rule": rule})
