"""write_dataset(): byte-reproducible dataset files plus a manifest that proves them.

Same curation result -> same bytes: rows are sorted, JSON keys sorted (orjson
OPT_SORT_KEYS), no timestamps or absolute paths in any file. ``dataset_id`` is the sha256
over the sorted sha256s of the data files, so it names the content, not the run.
The manifest is written last: a reader that finds it finds a complete dataset.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from rlstream.curation.curate import Conflict, CurationResult, DatasetRejectedError
from rlstream.curation.method import fit_method
from rlstream.curation.next_steps import render_next_steps
from rlstream.curation.options import CurateOptions
from rlstream.curation.records import dpo_pairs, dpo_row, grpo_row, heldout_row, sft_row
from rlstream.curation.turn_files import Granularity, resolve_granularity, turn_files
from rlstream.errors import RlstreamError
from rlstream.metrics import Method, Profile
from rlstream.rollout import ScoredRollout

#: the ``policy_rows`` key of rows whose producing model the logs did not name
UNKNOWN_POLICY = "(none)"
DATA_FILES = ("grpo.jsonl", "dpo.jsonl", "sft.jsonl", "heldout.jsonl", "next_steps.md")
MANIFEST = "manifest.json"


class DatasetIntegrityError(RlstreamError):
    """A dataset file does not match the sha256 its manifest records."""

    code = "dataset_integrity"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FileEntry(_Frozen):
    sha256: str
    bytes: int
    rows: int


class LineageEntry(_Frozen):
    """One dataset row back to its rollouts, conversations and source offsets."""

    file: str
    row: int
    task_key: str
    rollout_ids: tuple[str, ...]
    conversation_ids: tuple[str, ...]
    sources: tuple[dict[str, JsonValue], ...]


class Manifest(_Frozen):
    schema_version: Literal[1] = 1
    dataset_id: str
    files: dict[str, FileEntry]
    counts: dict[str, int]
    dropped_rollouts: dict[str, int]
    dropped_groups: dict[str, int]
    conflicting_rewards: tuple[Conflict, ...]
    profiles: dict[str, Profile]
    thresholds: CurateOptions
    endorsed_features: tuple[str, ...]
    method: Method
    method_reason: str
    reward_versions: dict[str, tuple[str, ...]]
    reward_specs: tuple[str, ...]
    policy_versions: tuple[str, ...]
    lineage: tuple[LineageEntry, ...]
    #: task keys kept out of training (their prompts are in heldout.jsonl)
    heldout_task_keys: tuple[str, ...] = ()
    #: what one sft/dpo/heldout row is: a conversation, or one assistant turn
    granularity: Granularity = "conversation"
    #: turn-level gradient support and reference coverage (granularity "turn")
    turn_profile: dict[str, float | int] | None = None
    #: 1 as released; each erasure that removed rows adds one (rlstream.erasure). The
    #: dataset id still names the release; ``files`` hold this revision's hashes
    revision: int = 1
    #: the erasures that rewrote or revoked this release, oldest first
    revised_by: tuple[str, ...] = ()
    #: the erasure that revoked the release: its rows are gone and nothing may train on it
    revoked_by: str | None = None
    #: rows per file per producing model (the rows' ``policy``; ``(none)``: not logged), so
    #: on-policy training (``TrainConfig.on_policy``) can be checked without reading rows
    policy_rows: dict[str, dict[str, int]] = Field(default_factory=dict)


#: written only once an erasure set them, so a release's bytes do not change otherwise
_ERASURE_FIELDS = ("revision", "revised_by", "revoked_by")


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(r, option=orjson.OPT_SORT_KEYS) + b"\n" for r in rows)


def _lineage(
    file: str, row: int, task_key: str, rollouts: tuple[ScoredRollout, ...]
) -> LineageEntry:
    return LineageEntry(
        file=file,
        row=row,
        task_key=task_key,
        rollout_ids=tuple(r.rollout_id for r in rollouts),
        conversation_ids=tuple(r.conversation_id for r in rollouts),
        sources=tuple(
            r.transcript.source.model_dump(mode="json", exclude_none=True) for r in rollouts
        ),
    )


def count_policies(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Rows per ``policy`` value (``(none)`` for null), sorted by policy."""
    counts: dict[str, int] = {}
    for r in rows:
        key = r.get("policy") or UNKNOWN_POLICY
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def build_files(
    result: CurationResult,
) -> tuple[CurationResult, dict[str, bytes], dict[str, int], list[LineageEntry]]:
    """File contents, row counts and lineage, all in deterministic order, and ``result``
    with the method the trainer can run on these files (:func:`fit_method`)."""
    return _build(result)[:4]


def _build(
    result: CurationResult,
) -> tuple[
    CurationResult,
    dict[str, bytes],
    dict[str, int],
    list[LineageEntry],
    Granularity,
    dict[str, float | int] | None,
    dict[str, dict[str, int]],
]:
    grpo: list[dict[str, Any]] = []
    dpo: list[dict[str, Any]] = []
    sft: list[dict[str, Any]] = []
    lineage: list[LineageEntry] = []
    granularity = resolve_granularity(result)
    turns = turn_files(result) if granularity == "turn" else None
    for g in result.kept:
        lineage.append(_lineage("grpo.jsonl", len(grpo), g.task_key, g.rollouts))
        grpo.append(grpo_row(g))
        if turns is None:
            for chosen, rejected, ratio in dpo_pairs(g, result.options.dpo_max_length_ratio):
                lineage.append(_lineage("dpo.jsonl", len(dpo), g.task_key, (chosen, rejected)))
                dpo.append(dpo_row(g.task_key, chosen, rejected, ratio))
    if turns is None:
        for r in sorted(result.sft_pool, key=lambda r: (r.task_key, r.rollout_id)):
            lineage.append(_lineage("sft.jsonl", len(sft), r.task_key, (r,)))
            sft.append(sft_row(r))
        heldout = [heldout_row(g.task_key, g.rollouts) for g in result.heldout]
    else:
        for name, target, pairs in (("dpo.jsonl", dpo, turns.dpo), ("sft.jsonl", sft, turns.sft)):
            for row, sources in pairs:
                lineage.append(_lineage(name, len(target), row["task_key"], sources))
                target.append(row)
        heldout = turns.heldout
    rows = {
        "grpo.jsonl": len(grpo),
        "dpo.jsonl": len(dpo),
        "sft.jsonl": len(sft),
        "heldout.jsonl": len(heldout),
    }
    files = {
        "grpo.jsonl": _jsonl(grpo),
        "dpo.jsonl": _jsonl(dpo),
        "sft.jsonl": _jsonl(sft),
        "heldout.jsonl": _jsonl(heldout),
    }
    method, reason = fit_method(result.method, result.method_reason, grpo, rows)
    if (method, reason) != (result.method, result.method_reason):
        result = result.model_copy(update={"method": method, "method_reason": reason})
    files["next_steps.md"] = render_next_steps(result, rows, granularity).encode()
    rows["next_steps.md"] = 0
    policies = {
        name: count_policies(data)
        for name, data in (("grpo.jsonl", grpo), ("dpo.jsonl", dpo), ("sft.jsonl", sft))
    }
    profile = turns.profile if turns else None
    return result, files, rows, lineage, granularity, profile, policies


def write_dataset(result: CurationResult, out_dir: Path) -> Manifest:
    """Write grpo/dpo/sft/heldout JSONL, next_steps.md and manifest.json into ``out_dir``.

    The manifest's ``method`` can differ from ``result.method``: read the manifest's."""
    if result.rejected:
        raise DatasetRejectedError(result.rejection_reason or "curation rejected the dataset")
    result, files, rows, lineage, granularity, turn_profile, policies = _build(result)
    entries = {
        name: FileEntry(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data), rows=rows[name])
        for name, data in files.items()
    }
    dataset_id = hashlib.sha256(
        "\n".join(sorted(e.sha256 for e in entries.values())).encode()
    ).hexdigest()
    every = [r for g in result.kept for r in g.rollouts] + list(result.sft_pool)
    versions: dict[str, set[str]] = {}
    for r in every:
        for res in r.results:
            versions.setdefault(res.reward, set()).add(res.version)
    manifest = Manifest(
        dataset_id=dataset_id,
        files=entries,
        counts={
            "input_rollouts": result.input_rollouts,
            "kept_groups": len(result.kept),
            "kept_rollouts": result.kept_rollouts,
            "mixed_policy_groups": result.mixed_policy_groups,
            "grpo_rows": rows["grpo.jsonl"],
            "dpo_rows": rows["dpo.jsonl"],
            "sft_rows": rows["sft.jsonl"],
            "conflicting_rewards": len(result.conflicting_rewards),
            "heldout_task_keys": len(result.heldout),
            "heldout_rollouts": sum(g.n for g in result.heldout),
        },
        dropped_rollouts=result.dropped_rollouts,
        dropped_groups=result.dropped_groups,
        conflicting_rewards=result.conflicting_rewards,
        profiles={"before": result.profile_before, "after": result.profile_after},
        thresholds=result.options,
        endorsed_features=result.endorsed,
        method=result.method,
        method_reason=result.method_reason,
        reward_versions={k: tuple(sorted(v)) for k, v in sorted(versions.items())},
        reward_specs=tuple(sorted({r.reward_spec for r in every})),
        policy_versions=tuple(sorted({v for r in every if (v := r.transcript.policy_version)})),
        lineage=tuple(lineage),
        heldout_task_keys=tuple(g.task_key for g in result.heldout),
        granularity=granularity,
        turn_profile=turn_profile,
        policy_rows=policies,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        _write(out_dir / name, data)
    _write(out_dir / MANIFEST, manifest_bytes(manifest))
    return manifest


def manifest_bytes(manifest: Manifest) -> bytes:
    unset = {f for f in _ERASURE_FIELDS if f not in manifest.model_fields_set}
    return (
        orjson.dumps(
            manifest.model_dump(mode="json", exclude=unset),
            option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2,
        )
        + b"\n"
    )


def verify_dataset(out_dir: Path) -> Manifest:
    """Re-hash every file against manifest.json; raises on any mismatch."""
    manifest = Manifest.model_validate_json((out_dir / MANIFEST).read_bytes())
    if manifest.revoked_by:
        raise DatasetIntegrityError(
            f"dataset {manifest.dataset_id[:12]} was revoked by erasure {manifest.revoked_by}:"
            " its rows are gone and nothing may train on it (docs/erasure.md)"
        )
    for name, entry in manifest.files.items():
        digest = hashlib.sha256((out_dir / name).read_bytes()).hexdigest()
        if digest != entry.sha256:
            raise DatasetIntegrityError(
                f"{name}: sha256 {digest} does not match manifest {entry.sha256}"
            )
    return manifest
