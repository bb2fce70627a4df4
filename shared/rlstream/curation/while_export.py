"""A curated dataset's kept rollouts as While rows (``row-v1.json``), graded by rlstream.

``rlstream export while`` writes one row per rollout of every kept (training) group, so a
team that reads While rows gets what rlstream kept and how it graded it. The rows are the
transcripts' own While rows (:func:`rlstream.formats.while_rows.emit_while`: a rollout that
came in as a While row goes out with every field it had) with rlstream's verdict on top:

* ``reward`` the graded score, ``label_source`` the reward function(s), ``reason`` their
  reasons; ``judge_meta`` the reward spec id (``version``), rlstream's per-reward results and
  the source row's own verdict (``source``), which the new verdict replaces;
* ``markers`` gain ``rlstream.<reward>.<component>`` (each reward's components);
* ``scenario_id``, ``group_id`` (rlstream's task key, the group curation kept),
  ``rollout_index`` (place in the group) and ``policy_version`` (the transcript's policy or
  agent version) when the row had none.

The kept rollouts are read from the dataset's manifest (its ``grpo.jsonl`` lineage) after
``verify_dataset`` has checked the files against it, so the export is what the manifest says
the dataset holds now, not what a scored file once held. A tool step that also carried text (whileai writes these; the schema's
``oneOf`` rejects them) is written as a ``{text}`` step and then the ``{tool}`` step.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rlstream.curation.writer import verify_dataset
from rlstream.errors import RlstreamError
from rlstream.fastmodel import replaced
from rlstream.formats.while_rows import emit_while
from rlstream.formats.while_steps import TOOL_TEXT
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message, Transcript

#: the source row's verdict keys the graded verdict replaces (kept under judge_meta.source)
REPLACED = ("reward", "reason", "label_source", "judge_name", "judge_status", "failure_class")


class ExportMismatchError(RlstreamError):
    """The scored file is not the one the dataset was curated from."""

    code = "export_mismatch"


def _untext(m: Message) -> Message:
    extra = {k: v for k, v in m.extra.items() if k != TOOL_TEXT}
    return replaced(m, {"extra": extra})


def _valid_steps(t: Transcript) -> Transcript:
    """``t`` without the marker that writes a tool step with text (schema-invalid)."""
    if not any(TOOL_TEXT in m.extra for m in t.messages):
        return t
    return replaced(t, {"messages": tuple(_untext(m) for m in t.messages)})


def scored_row(s: ScoredRollout, index: int) -> dict[str, Any]:
    """One graded rollout as a While row; ``index`` is its place in its group."""
    t = s.transcript
    row = emit_while(_valid_steps(t))
    source = {k: row.pop(k) for k in (*REPLACED, "judge_meta") if k in row}
    # 0 and 1 as ints, as whileai writes them: its pass_at and select read those as outcomes
    row["reward"] = int(s.score) if s.score in (0.0, 1.0) else s.score
    row["label_source"] = "+".join(r.reward for r in s.results)
    reasons = [reason for r in s.results for reason in r.reasons]
    if reasons:
        row["reason"] = "; ".join(reasons)
    meta: dict[str, Any] = {
        "version": s.reward_spec,
        "rlstream": {
            "rollout_id": s.rollout_id,
            "passed": s.passed,
            "results": [
                {"reward": r.reward, "version": r.version, "score": r.score, "passed": r.passed}
                for r in s.results
            ],
        },
    }
    if source:
        meta["source"] = source
    row["judge_meta"] = meta
    markers = row.get("markers")
    merged: dict[str, Any] = dict(markers) if isinstance(markers, dict) else {}
    for r in s.results:
        for name, value in r.components.items():
            merged[f"rlstream.{r.reward}.{name}"] = value
    if merged and (markers is None or isinstance(markers, dict)):
        row["markers"] = merged
    scenario = t.metadata.get("scenario_id")
    row.setdefault("scenario_id", scenario if isinstance(scenario, str) else s.task_key)
    row.setdefault("group_id", s.task_key)
    row.setdefault("rollout_index", index)
    policy = t.policy_version or t.agent_version
    if policy is not None:
        row.setdefault("policy_version", policy)
    return row


def _one_copy(copies: list[ScoredRollout]) -> ScoredRollout:
    """The copy curation kept of a redelivered rollout (same tie-break as curate())."""
    if len(copies) == 1:
        return copies[0]
    return min(copies, key=lambda r: hashlib.sha256(r.model_dump_json().encode()).hexdigest())


def dataset_rows(dataset: Path, scored: Iterable[ScoredRollout]) -> list[dict[str, Any]]:
    """While rows for every kept rollout of the dataset at ``dataset``, in its order;
    ``scored`` is the graded file it was curated from."""
    manifest = verify_dataset(dataset)
    groups = [e for e in manifest.lineage if e.file == "grpo.jsonl"]
    wanted = {rid for e in groups for rid in e.rollout_ids}
    found: dict[str, list[ScoredRollout]] = {}
    for s in scored:
        if s.rollout_id in wanted:
            found.setdefault(s.rollout_id, []).append(s)
    missing = wanted - found.keys()
    if missing:
        raise ExportMismatchError(
            f"the scored file lacks {len(missing)} of the dataset's {len(wanted)} kept "
            "rollouts: pass the graded file the dataset was curated from (--in)"
        )
    rows = []
    for e in groups:
        for i, (rid, cid) in enumerate(zip(e.rollout_ids, e.conversation_ids, strict=True)):
            s = _one_copy(found[rid])
            if s.conversation_id != cid:
                raise ExportMismatchError(
                    f"rollout {rid[:12]} is conversation {s.conversation_id!r} in the scored "
                    f"file but {cid!r} in the dataset"
                )
            rows.append(scored_row(s, i))
    return rows
