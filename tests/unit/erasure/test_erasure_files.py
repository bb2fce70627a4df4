"""A release's erased rows out of its files: a new revision that still verifies (lineage
renumbered, hashes and counts redone), or the release revoked; crash-safe; only inside the
dataset roots."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from rlstream.curation import CurateOptions, curate, verify_dataset, write_dataset
from rlstream.curation.heldout import keys_rule
from rlstream.curation.writer import DatasetIntegrityError, Manifest
from rlstream.erasure.files import (
    REVOKED_MARKER,
    IsErased,
    digest_check,
    erase_release,
    finish_swap,
    scrub_run,
)
from rlstream.grading import grade_many
from rlstream.grading.spec import RewardSpec
from rlstream.rollout import ScoredRollout
from rlstream.storage import erased_digest
from rlstream.transcript import Transcript

pytestmark = pytest.mark.unit

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
]


def _transcript(cid: str, task: str, resolved: bool) -> Transcript:
    words = " ".join(WORDS[(hash(cid) + i) % len(WORDS)] for i in range(12))
    return Transcript.model_validate(
        {
            "conversation_id": cid,
            "agent": "bot",
            "task_key": f"task_id:{task}",
            "redacted": True,
            "messages": [
                {"role": "user", "content": f"help with {task}"},
                {"role": "assistant", "content": f"{cid}: {words}"},
            ],
            "outcome": {"resolved": resolved},
        }
    )


def _release(root: Path) -> tuple[Path, list[ScoredRollout]]:
    ts = [_transcript(f"c-{t}-{i}", f"t{t}", i % 2 == 0) for t in range(4) for i in range(5)] + [
        _transcript(f"h-{i}", "held", i % 2 == 0) for i in range(3)
    ]
    rs = [r for r in grade_many(ts, RewardSpec.parse("outcome")) if isinstance(r, ScoredRollout)]
    result = curate(rs, CurateOptions(), heldout=keys_rule({"task_id:held"}))
    folder = root / "bot" / "ds"
    write_dataset(result, folder)
    return folder, rs


def _check(*ids: str) -> IsErased:
    return digest_check(
        {erased_digest("rollout", i) for i in ids} | {erased_digest("conversation", i) for i in ids}
    )


def test_rewrite_removes_the_rows_and_the_revision_verifies(tmp_path: Path) -> None:
    folder, rs = _release(tmp_path)
    before = Manifest.model_validate_json((folder / "manifest.json").read_bytes())
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    gone = next(r for r in rs if r.task_key == "task_id:t1")
    held = next(r for r in rs if r.task_key == "task_id:held")
    check = _check(gone.rollout_id, held.rollout_id)
    dry = erase_release(folder, [tmp_path], check, "e1", revoke=False, dry_run=True)
    assert dry[0] == "rewritten"
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == files  # nothing changed
    outcome, removed, manifest = erase_release(
        folder, [tmp_path], check, "e1", revoke=False, dry_run=False
    )
    assert outcome == "rewritten" and removed == dry[1] and removed
    after = verify_dataset(folder)
    assert after == manifest and after.revision == 2 and after.revised_by == ("e1",)
    assert after.dataset_id == before.dataset_id
    text = b"".join((folder / n).read_bytes() for n in after.files)
    assert gone.rollout_id.encode() not in text
    assert held.rollout_id.encode() not in text
    assert "task_id:held" not in after.heldout_task_keys
    for e in after.lineage:  # every lineage entry still points at its own row
        line = (folder / e.file).read_bytes().splitlines()[e.row]
        assert orjson.loads(line)["task_key"] == e.task_key
    assert not any(gone.rollout_id in e.rollout_ids for e in after.lineage)
    assert after.counts["grpo_rows"] == after.files["grpo.jsonl"].rows
    # a second pass finds nothing left to remove
    again = erase_release(
        folder, [tmp_path], _check(gone.rollout_id), "e2", revoke=False, dry_run=False
    )
    assert again[0] == "unchanged"
    assert not list(tmp_path.glob("bot/.*"))  # no staging folder left


def test_revoke_removes_every_row_and_training_refuses(tmp_path: Path) -> None:
    folder, rs = _release(tmp_path)
    released = b"".join(p.read_bytes() for p in folder.glob("*.jsonl"))
    victim = next(r for r in rs if r.rollout_id.encode() in released)  # one the release holds
    check = _check(victim.rollout_id)
    outcome, removed, _ = erase_release(folder, [tmp_path], check, "e9", revoke=True, dry_run=False)
    assert outcome == "revoked" and sum(removed.values()) > 0
    assert not any((folder / n).exists() for n in ("grpo.jsonl", "sft.jsonl", "heldout.jsonl"))
    assert (folder / REVOKED_MARKER).is_file()
    with pytest.raises(DatasetIntegrityError, match="revoked by erasure e9"):
        verify_dataset(folder)
    manifest = Manifest.model_validate_json((folder / "manifest.json").read_bytes())
    assert manifest.lineage == () and manifest.revoked_by == "e9"


def test_an_unerased_release_keeps_its_bytes(tmp_path: Path) -> None:
    folder, _ = _release(tmp_path)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert b'"revision"' not in before["manifest.json"]
    assert (
        erase_release(folder, [tmp_path], _check("nobody"), "e", revoke=False, dry_run=False)[0]
        == "unchanged"
    )
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_only_inside_the_roots_and_never_a_link(tmp_path: Path) -> None:
    folder, rs = _release(tmp_path / "a")
    check = _check(rs[0].rollout_id)
    assert (
        erase_release(folder, [tmp_path / "b"], check, "e", revoke=False, dry_run=False)[0]
        == "skipped"
    )
    link = tmp_path / "a" / "bot" / "link"
    os.symlink(folder, link)
    assert erase_release(link, [tmp_path], check, "e", revoke=False, dry_run=False)[0] == "skipped"
    assert (
        erase_release(tmp_path / "a" / "none", [tmp_path], check, "e", revoke=False, dry_run=False)[
            0
        ]
        == "absent"
    )


def test_a_swap_a_crash_interrupted_is_finished(tmp_path: Path) -> None:
    folder, _ = _release(tmp_path)
    staged = folder.parent / f".{folder.name}.erasing-e1"
    old = folder.parent / f".{folder.name}.erased-e1"
    staged.mkdir()
    (staged / "manifest.json").write_bytes((folder / "manifest.json").read_bytes())
    folder.rename(old)  # the crash: old moved away, new not yet in place
    finish_swap(folder)
    assert (folder / "manifest.json").is_file()
    assert not staged.exists() and not old.exists()


def test_a_finished_run_loses_its_row_copies_not_its_weights(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r1"
    (run / "work").mkdir(parents=True)
    (run / "work" / "prompts.jsonl").write_text("{}\n")
    (run / "adapter.safetensors").write_bytes(b"w")
    assert scrub_run(run, [tmp_path / "runs"], dry_run=True) == ("rewritten", 1)
    assert (run / "work" / "prompts.jsonl").exists()
    assert scrub_run(run, [tmp_path / "runs"], dry_run=False) == ("rewritten", 1)
    assert not (run / "work" / "prompts.jsonl").exists() and (run / "adapter.safetensors").exists()
    assert scrub_run(run, [tmp_path / "elsewhere"], dry_run=False)[0] == "skipped"
