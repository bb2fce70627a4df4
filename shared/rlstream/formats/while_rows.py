"""While rows (``row-v1.json`` of the ``whileai`` package): one graded agent rollout a row.

A row projects a Task, a Rollout, its Judgments and Markers. ``parse_while`` maps it onto a
Transcript: ``opener``/``prompt``/``steps``/``final_text`` become messages
(:mod:`rlstream.formats.while_steps`), ``model_version``/``policy_version`` the transcript's
``model``/``policy_version``, the verdict keys (``reward``, ``reason``, ``label_source``,
``judge_name``, ...) its ``outcome`` (what the ``outcome`` reward grades), ``tools`` its
tools, ``privileged.reference`` its ``label``, and every other key (``scenario_id``,
``rollout_index``, ``markers``, the axes, ``finish_reason`` ...) ``metadata`` under its own
name: ``scenario_id`` is a task field, so it keys the task.

``emit_while`` is the inverse. What one side cannot say rides along: a row field the walk
does not reproduce is kept in ``metadata["rlstream_while"]``; what a transcript has beyond
a row (system messages, ids, timestamps, agent ...) goes to the row's ``rlstream`` object,
which whileai passes through untouched. So While -> rlstream -> While and rlstream -> While
-> rlstream both keep every field (tests/unit/formats/test_while_rows.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from rlstream.errors import SchemaViolation
from rlstream.formats._common import content_hash, jsonable
from rlstream.formats.while_steps import Parts, build, conversation, walk
from rlstream.transcript.model import Message, Transcript

SCHEMA_VERSION = "1"
#: metadata key of the parser's bookkeeping (row fields the walk does not reproduce)
BOOK = "rlstream_while"
#: the row key of what a transcript has beyond a row
RESIDUE = "rlstream"
#: ``row-v1.json``'s row properties (a test holds this equal to the installed schema)
ROW_FIELDS = (
    "schema_version", "prompt", "steps", "final_text", "scenario_id", "spec_id",
    "privileged", "messages", "opener", "opening", "tier", "ask_family", "intent_known",
    "tool_known", "stance", "tone", "length", "ask", "vagueness", "phrasing", "pressure",
    "user", "texture", "history", "world_state", "faults", "fault_detected", "rollout_index",
    "model_version", "reward", "reason", "label_source", "judge_name", "judge_status",
    "failure_class", "llm_reward", "llm_reason", "qwen_reward", "markers", "gold_reward",
    "gold_labels", "logprob", "n_tokens", "token_logprobs", "sampling", "policy_version",
    "finish_reason", "writer_model", "user_model", "calibration", "conversation_id", "ts",
    "lineage", "quality", "quality_reason", "quality_scores", "judge_meta", "tools",
    "group_id",
)  # fmt: skip
_NUM = (int, float)
#: verdict keys -> the type a row may hold there (None: any); they live in ``outcome``
VERDICT: dict[str, tuple[type, ...] | None] = {
    "reward": (*_NUM, type(None)),
    "reason": (str,),
    "grader_reason": (str,),
    "label_source": (str,),
    "judge_name": (str,),
    "judge_status": (str,),
    "failure_class": (str,),
    "llm_reward": (*_NUM, type(None)),
    "llm_reason": (str,),
    "qwen_reward": _NUM,
    "judge_meta": (dict,),
    "gold_reward": (int,),
    "gold_labels": (list,),
}
_PARTS = ("opener", "prompt", "steps", "final_text")
_CONSUMED = frozenset({"schema_version", "messages", "conversation_id", *_PARTS, *VERDICT})


def is_while(record: Mapping[str, Any]) -> bool:
    return (
        record.get("schema_version") == SCHEMA_VERSION
        and "prompt" in record
        and isinstance(record.get("steps"), list)
        and "final_text" in record
    )


def _parts_of(p: Parts) -> dict[str, Any]:
    out: dict[str, Any] = {"prompt": p.prompt, "steps": p.steps, "final_text": p.final_text}
    if p.opener:
        out["opener"] = p.opener
    return out


def _walked(messages: list[Message]) -> Parts:
    """The parts a row writes for ``messages``; for a shape steps cannot hold (a tool result
    without a call), the first user turn and the last answer (the messages ride whole)."""
    parts = walk(messages)
    if parts is not None:
        return parts
    first = next((m.text for m in messages if m.role == "user"), "")
    last = next((m.text for m in reversed(messages) if m.role == "assistant" and m.content), "")
    return Parts("", first, [], last)


def _residue(record: Mapping[str, Any]) -> dict[str, Any]:
    value = record.get(RESIDUE)
    return value if isinstance(value, dict) and value.get("v") == 1 else {}


def _built(row: Mapping[str, Any]) -> list[Message]:
    parts = [row.get(k, "") for k in _PARTS]
    built = build(*parts)
    if built is None:  # a shape steps cannot rebuild: keep the text, the raw row rides along
        built = [Message(role="user", content=str(parts[1]))] if parts[1] else []
        if isinstance(parts[3], str) and parts[3]:
            built.append(Message(role="assistant", content=parts[3]))
    return built


def _patched(m: Message, patch: dict[str, Any]) -> Message:
    data = {**m.model_dump(mode="json"), **patch}
    calls = patch.get("tool_calls")
    if calls is not None:  # one patch per call
        if len(calls) != len(m.tool_calls):
            raise SchemaViolation("while: rlstream patch names another number of tool calls")
        data["tool_calls"] = [
            {**c.model_dump(mode="json"), **p} for c, p in zip(m.tool_calls, calls, strict=True)
        ]
    return Message.model_validate(data)


def _messages(record: Mapping[str, Any], residue: dict[str, Any]) -> list[Message]:
    full = residue.get("messages")
    if isinstance(full, list):
        return [Message.model_validate(m) for m in full]
    built = _built(record)
    for key, patch in (residue.get("patches") or {}).items():
        i = int(key)
        if not 0 <= i < len(built):
            raise SchemaViolation(f"while: rlstream patch for message {i} of {len(built)}")
        built[i] = _patched(built[i], patch)
    for i, m in residue.get("system") or []:
        built.insert(int(i), Message.model_validate(m))
    return built


def _book(record: Mapping[str, Any], messages: list[Message]) -> dict[str, JsonValue]:
    """The row fields a walk of ``messages`` would not write back as they are."""
    again = _parts_of(_walked([m for m in messages if m.role != "system"]))
    row: dict[str, JsonValue] = {}
    absent: list[JsonValue] = []
    for key in _PARTS:
        if key in record and (key not in again or again[key] != record[key]):
            row[key] = jsonable(record[key])
        elif key not in record and key in again:
            absent.append(key)
    if "messages" not in record:
        absent.append("messages")
    elif record["messages"] != conversation(
        {k: v for k, v in {**again, **row}.items() if k not in absent}
    ):
        row["messages"] = jsonable(record["messages"])
    book: dict[str, JsonValue] = {}
    if row:
        book["row"] = row
    if absent:
        book["absent"] = absent
    return book


def parse_while(record: Mapping[str, Any]) -> Transcript:
    if BOOK in record:
        raise SchemaViolation(f"while: the key {BOOK!r} is reserved")
    residue = _residue(record)
    messages = _messages(record, residue)
    meta: dict[str, JsonValue] = {}
    outcome: dict[str, JsonValue] = {}
    fields: dict[str, Any] = {"tools": ()}
    for key, value in record.items():
        if key in VERDICT:
            outcome[key] = jsonable(value)
        elif key in ("model_version", "policy_version") and isinstance(value, str):
            fields["model" if key == "model_version" else key] = value
        elif key == "tools" and isinstance(value, list) and value:
            if all(isinstance(t, dict) for t in value):
                fields["tools"] = tuple(jsonable(t) for t in value)
            else:
                meta[key] = jsonable(value)
        elif key not in _CONSUMED and not (key == RESIDUE and residue):
            meta[key] = jsonable(value)
    cid = record.get("conversation_id")
    if not (isinstance(cid, str) and cid):
        if cid is not None:
            meta["conversation_id"] = jsonable(cid)
        cid = content_hash(record)
    priv = meta.get("privileged")
    label = priv.get("reference") if isinstance(priv, dict) else None
    for key in ("agent", "agent_version", "started_at", "ended_at"):
        if key in residue:
            fields[key] = residue[key]
    if residue.get("privileged_from_label"):
        meta.pop("privileged", None)
    meta.update(residue.get("metadata") or {})
    outcome.update(residue.get("outcome") or {})
    book = _book(record, messages)
    if book:
        meta[BOOK] = book
    return Transcript(
        conversation_id=str(residue.get("conversation_id", cid)),
        messages=tuple(messages),
        outcome=outcome,
        label=residue["label"] if "label" in residue else jsonable(label),
        metadata=meta,
        format="while",
        **fields,
    )


def _diff(built: list[Message], actual: list[Message]) -> dict[str, Any] | None:
    """Per-message field patches that turn ``built`` into ``actual``; None when the two
    differ in length or roles (then the row carries the messages whole)."""
    if len(built) != len(actual) or any(
        a.role != b.role for a, b in zip(built, actual, strict=True)
    ):
        return None
    patches: dict[str, Any] = {}
    for i, (b, a) in enumerate(zip(built, actual, strict=True)):
        if a == b:
            continue
        bd, ad = b.model_dump(mode="json"), a.model_dump(mode="json")
        patch = {k: v for k, v in ad.items() if bd.get(k) != v}
        if "tool_calls" in patch:
            if len(a.tool_calls) != len(b.tool_calls):
                return None
            patch["tool_calls"] = [
                {k: v for k, v in ac.items() if bc.get(k) != v}
                for bc, ac in zip(bd["tool_calls"], ad["tool_calls"], strict=True)
            ]
        patches[str(i)] = patch
    return patches


def _type_ok(key: str, value: Any) -> bool:
    types = VERDICT.get(key)
    return not isinstance(value, bool) and (types is None or isinstance(value, types))


def emit_while(t: Transcript) -> dict[str, Any]:
    """The While row of ``t`` (the inverse of :func:`parse_while`)."""
    native = t.format == "while"
    raw_book = t.metadata.get(BOOK)
    book: dict[str, Any] = raw_book if isinstance(raw_book, dict) else {}
    overrides: dict[str, Any] = dict(book.get("row") or {})
    absent = set(book.get("absent") or ())
    systems = [
        [i, m.model_dump(mode="json")] for i, m in enumerate(t.messages) if m.role == "system"
    ]
    rest = [m for m in t.messages if m.role != "system"]
    residue: dict[str, Any] = {}
    row: dict[str, Any] = {"schema_version": SCHEMA_VERSION, **_parts_of(_walked(rest))}
    for key in _PARTS:
        if key in overrides:
            row[key] = overrides[key]
        elif key in absent:
            row.pop(key, None)
    patches = _diff(_built(row), rest)
    if patches is None:
        residue["messages"] = [m.model_dump(mode="json") for m in t.messages]
    else:
        if patches:
            residue["patches"] = patches
        if systems:
            residue["system"] = systems
    if "messages" in overrides:
        row["messages"] = overrides["messages"]
    elif "messages" not in absent:
        row["messages"] = conversation(row)
    if t.model is not None:
        row["model_version"] = t.model
    if t.policy_version is not None:
        row["policy_version"] = t.policy_version
    if t.tools:
        row["tools"] = list(t.tools)
    spill_out: dict[str, Any] = {}
    for key, value in t.outcome.items():
        if key in VERDICT and key not in row and (native or _type_ok(key, value)):
            row[key] = value
        else:
            spill_out[key] = value
    spill_meta: dict[str, Any] = {}
    for key, value in t.metadata.items():
        if key == BOOK:
            continue
        fits = native or (key not in ROW_FIELDS and key != RESIDUE)
        if key in row or not fits:
            spill_meta[key] = value
        else:
            row[key] = value
    priv = row.get("privileged")
    has_ref = isinstance(priv, dict) and "reference" in priv
    if t.label is not None and "privileged" not in row:
        row["privileged"] = {"reference": t.label}  # the gold answer a judge sees
        residue["privileged_from_label"] = True
    elif t.label != (priv.get("reference") if has_ref and isinstance(priv, dict) else None):
        residue["label"] = t.label
    for key in ("agent", "agent_version", "started_at", "ended_at"):
        value = getattr(t, key)
        if value is not None:
            residue[key] = value.isoformat() if key.endswith("_at") else value
    if spill_out:
        residue["outcome"] = spill_out
    _attach(row, residue, spill_meta)
    if t.conversation_id != content_hash(row):
        if "conversation_id" not in row:
            row["conversation_id"] = t.conversation_id
        else:
            ours = row.get(RESIDUE) if isinstance(row.get(RESIDUE), dict) and residue else None
            if ours is not None:
                ours["conversation_id"] = t.conversation_id
            else:
                _attach(row, {"conversation_id": t.conversation_id}, {})
    return row


def _attach(row: dict[str, Any], residue: dict[str, Any], spill_meta: dict[str, Any]) -> None:
    """Put ``residue`` (and the metadata that did not fit the row) on the row as ``rlstream``;
    a While row's own ``rlstream`` key then rides inside it."""
    if not residue and not spill_meta:
        return
    meta = dict(spill_meta)
    if RESIDUE in row:
        meta[RESIDUE] = row.pop(RESIDUE)
    if meta:
        residue = {**residue, "metadata": meta}
    row[RESIDUE] = {"v": 1, **residue}
