"""Erased rows out of a released dataset's files: a new revision, or the release revoked.

A row goes when it was built from an erased rollout: its manifest lineage lists one, or
the row itself names one (``rollout_ids``, ``reference_rollout_id`` in its label ...). A
GRPO row stands for its whole group (its prompt and label come from several rollouts), so
a group with one erased member loses its row; the same for a held-out row. Rows are matched
by the digests ``erased_ids`` keeps, so a rewrite left pending (the folder was not
reachable) can be finished later from the record alone.

Crash safety: the new revision is written complete into a sibling folder, then swapped in
with two renames; a folder left half way (``.erasing-*`` / ``.erased-*`` siblings) is
finished by the next run. Paths come from database rows: only folders strictly inside the
configured dataset roots are touched, never a symbolic link.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import orjson

from rlstream.curation.writer import (
    MANIFEST,
    FileEntry,
    LineageEntry,
    Manifest,
    count_policies,
    manifest_bytes,
)
from rlstream.retention.files import inside
from rlstream.storage import erased_digest

#: the row files a release may hold (next_steps.md holds no row)
ROW_FILES = ("grpo.jsonl", "dpo.jsonl", "sft.jsonl", "heldout.jsonl")
#: written into a revoked release: what went, when and why
REVOKED_MARKER = "revoked.json"

Outcome = Literal["rewritten", "revoked", "unchanged", "absent", "skipped"]
IsErased = Callable[[str], bool]


def digest_check(digests: set[str]) -> IsErased:
    """``is_erased(id)``: whether an id (rollout or conversation) is among the erased."""

    def check(value: str) -> bool:
        return (
            erased_digest("rollout", value) in digests
            or erased_digest("conversation", value) in digests
        )

    return check


def row_ids(value: Any) -> Iterator[str]:
    """Every rollout or conversation id a row names, JSON-string labels included."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k.endswith(("rollout_id", "conversation_id")) and isinstance(v, str):
                yield v
            elif k.endswith(("rollout_ids", "conversation_ids")) and isinstance(v, list):
                yield from (i for i in v if isinstance(i, str))
            elif k == "label" and isinstance(v, str) and v.startswith("{"):
                yield from row_ids(_json_or_none(v))
            else:
                yield from row_ids(v)
    elif isinstance(value, list):
        for item in value:
            yield from row_ids(item)


def _json_or_none(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _lines(data: bytes) -> list[bytes]:
    return [line for line in data.split(b"\n") if line.strip()]


def plan_rows(folder: Path, manifest: Manifest, is_erased: IsErased) -> dict[str, list[int]]:
    """Per row file, the indexes of the rows to remove (files with none are left out)."""
    by_row: dict[tuple[str, int], LineageEntry] = {(e.file, e.row): e for e in manifest.lineage}
    out: dict[str, list[int]] = {}
    for name in ROW_FILES:
        if name not in manifest.files or not (folder / name).is_file():
            continue
        gone: list[int] = []
        for i, line in enumerate(_lines((folder / name).read_bytes())):
            entry = by_row.get((name, i))
            ids = list(entry.rollout_ids + entry.conversation_ids) if entry else []
            ids += list(row_ids(orjson.loads(line)))
            if any(is_erased(x) for x in ids):
                gone.append(i)
        if gone:
            out[name] = gone
    return out


def _task_keys(data: bytes | None) -> set[str]:
    """Task keys of a row file's rows."""
    if not data:
        return set()
    rows = (orjson.loads(line) for line in _lines(data))
    return {str(r["task_key"]) for r in rows if isinstance(r, dict) and r.get("task_key")}


def _revised(
    manifest: Manifest,
    old: dict[str, bytes],
    new: dict[str, bytes],
    gone: dict[str, list[int]],
    erasure_id: str,
    is_erased: IsErased,
) -> Manifest:
    """The manifest of the rewritten files: hashes, counts, lineage renumbered, held-out
    keys whose every row went dropped, conflicts naming an erased rollout dropped."""
    entries = dict(manifest.files)
    for name, data in new.items():
        entries[name] = FileEntry(
            sha256=hashlib.sha256(data).hexdigest(), bytes=len(data), rows=len(_lines(data))
        )
    lineage: list[LineageEntry] = []
    for e in manifest.lineage:
        removed = gone.get(e.file, [])
        if e.row in removed:
            continue
        shift = sum(1 for r in removed if r < e.row)
        lineage.append(e.model_copy(update={"row": e.row - shift}) if shift else e)
    held = "heldout.jsonl"
    dropped = _task_keys(old.get(held)) - _task_keys(new.get(held, old.get(held)))
    heldout = tuple(k for k in manifest.heldout_task_keys if k not in dropped)
    counts = dict(manifest.counts)
    for name, key in (
        ("grpo.jsonl", "grpo_rows"),
        ("dpo.jsonl", "dpo_rows"),
        ("sft.jsonl", "sft_rows"),
    ):
        if key in counts and name in entries:
            counts[key] = entries[name].rows
    if "heldout_task_keys" in counts:
        counts["heldout_task_keys"] = len(heldout)
    conflicts = tuple(
        c for c in manifest.conflicting_rewards if not any(is_erased(r) for r in c.rollout_ids)
    )
    policies = dict(manifest.policy_rows)
    for name, data in new.items():
        if name in policies:
            policies[name] = count_policies([orjson.loads(line) for line in _lines(data)])
    return manifest.model_copy(
        update={
            "files": entries,
            "counts": counts,
            "policy_rows": policies,
            "conflicting_rewards": conflicts,
            "lineage": tuple(lineage),
            "heldout_task_keys": heldout,
            "revision": manifest.revision + 1,
            "revised_by": (*manifest.revised_by, erasure_id),
        }
    )


def _revoked(manifest: Manifest, erasure_id: str) -> Manifest:
    """A revoked release keeps its manifest's summary and no row, lineage or hash."""
    return manifest.model_copy(
        update={
            "files": {},
            "policy_rows": {},
            "lineage": (),
            "heldout_task_keys": (),
            "conflicting_rewards": (),
            "revision": manifest.revision + 1,
            "revised_by": (*manifest.revised_by, erasure_id),
            "revoked_by": erasure_id,
        }
    )


def content_sha256(manifest: Manifest) -> str:
    """sha256 over the sorted file hashes (``dataset_id`` is this for revision 1)."""
    return hashlib.sha256(
        "\n".join(sorted(e.sha256 for e in manifest.files.values())).encode()
    ).hexdigest()


def finish_swap(folder: Path) -> None:
    """Complete a rewrite a crash interrupted: the new revision in place, the old gone."""
    for staged in folder.parent.glob(f".{folder.name}.erasing-*"):
        if not folder.exists() and (staged / MANIFEST).is_file():
            staged.rename(folder)
        else:
            shutil.rmtree(staged, ignore_errors=True)
    for old in folder.parent.glob(f".{folder.name}.erased-*"):
        if folder.exists():
            shutil.rmtree(old, ignore_errors=True)


def _swap(
    folder: Path, files: dict[str, bytes | None], manifest: Manifest, erasure_id: str
) -> None:
    """Write the whole new revision beside ``folder`` (``files``: new contents, None to
    leave a file out), then swap the two folders."""
    staged = folder.parent / f".{folder.name}.erasing-{erasure_id}"
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir()
    for item in folder.iterdir():
        if item.name in files or item.name == MANIFEST or item.is_symlink():
            continue
        if item.is_dir():
            shutil.copytree(item, staged / item.name, symlinks=True)
        else:
            shutil.copy2(item, staged / item.name)
    for name, data in files.items():
        if data is not None:
            (staged / name).write_bytes(data)
    (staged / MANIFEST).write_bytes(manifest_bytes(manifest))  # last: the proof
    old = folder.parent / f".{folder.name}.erased-{erasure_id}"
    folder.rename(old)
    staged.rename(folder)
    shutil.rmtree(old)


def erase_release(
    folder: Path,
    roots: Sequence[Path],
    is_erased: IsErased,
    erasure_id: str,
    *,
    revoke: bool,
    dry_run: bool,
) -> tuple[Outcome, dict[str, int], Manifest | None]:
    """Remove the erased rows of one release; (outcome, rows removed per file, the new
    manifest). ``revoke``: remove every row file instead and mark the release revoked."""
    if folder.is_symlink() or not inside(folder, roots):
        return "skipped", {}, None
    if not dry_run:
        finish_swap(folder)
    if not (folder / MANIFEST).is_file():
        return "absent", {}, None
    manifest = Manifest.model_validate_json((folder / MANIFEST).read_bytes())
    if manifest.revoked_by:
        return "unchanged", {}, None
    gone = plan_rows(folder, manifest, is_erased)
    if not gone:
        return "unchanged", {}, None
    removed = {name: len(rows) for name, rows in gone.items()}
    old = {n: (folder / n).read_bytes() for n in ROW_FILES if (folder / n).is_file()}
    if revoke:
        removed = {n: len(_lines(data)) for n, data in old.items()}
        new_manifest = _revoked(manifest, erasure_id)
        marker = {"revoked_by": erasure_id, "reason": "erasure (docs/erasure.md)"}
        files: dict[str, bytes | None] = dict.fromkeys(old)
        files[REVOKED_MARKER] = orjson.dumps(marker) + b"\n"
        if not dry_run:
            _swap(folder, files, new_manifest, erasure_id)
        return "revoked", removed, new_manifest
    new: dict[str, bytes] = {}
    for name, rows in gone.items():
        drop = set(rows)
        kept = [line for i, line in enumerate(_lines(old[name])) if i not in drop]
        new[name] = b"".join(line + b"\n" for line in kept)
    new_manifest = _revised(manifest, old, new, gone, erasure_id, is_erased)
    if not dry_run:
        _swap(folder, dict(new), new_manifest, erasure_id)
    return "rewritten", removed, new_manifest


def scrub_run(folder: Path, roots: Sequence[Path], *, dry_run: bool) -> tuple[Outcome, int]:
    """Remove a finished run's copies of training rows (every ``*.jsonl`` below its folder,
    e.g. OpenRLHF's converted prompts); weights, logs and metrics stay. (outcome, files)."""
    if folder.is_symlink() or not inside(folder, roots):
        return "skipped", 0
    if not folder.is_dir():
        return "absent", 0
    copies = [p for p in folder.rglob("*.jsonl") if p.is_file() and not p.is_symlink()]
    if not dry_run:
        for p in copies:
            p.unlink(missing_ok=True)
    return ("rewritten" if copies else "unchanged"), len(copies)


def revised_record(stored: dict[str, Any], m: Manifest) -> dict[str, Any]:
    """The ``datasets.manifest`` column after a rewrite: the release event's (or batch
    record's) summary with this revision's hashes, counts and held-out keys."""
    dump = m.model_dump(mode="json", exclude={"lineage"})
    keys = ("files", "counts", "heldout_task_keys", "revision", "revised_by", "revoked_by")
    new = dict(stored)
    release = new.get("release")
    if isinstance(release, dict):
        release = dict(release)
        summary = release.get("manifest")
        if isinstance(summary, dict):
            release["manifest"] = {**summary, **{k: dump[k] for k in keys}}
        release["files"] = {n: e.sha256 for n, e in m.files.items()}
        new["release"] = release
    batch = new.get("batch")
    if isinstance(batch, dict):
        new["batch"] = {**batch, **{k: dump[k] for k in (*keys, "conflicting_rewards")}}
    new["erasure"] = {
        "revision": m.revision,
        "revised_by": list(m.revised_by),
        "revoked_by": m.revoked_by,
        "content_sha256": content_sha256(m),
    }
    return new
