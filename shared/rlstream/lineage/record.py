"""Record a batch-curated dataset in Postgres so lineage reaches its conversations.

The streaming curator writes these rows as it releases; the batch path (``rlstream
improve run``, the demo) writes files only. :func:`record_release` stores the dataset's
graded rollouts (their transcripts carry the file:line sources), marks them released in
the dataset (one transaction, never twice) and adds the dataset -> group -> rollout
edges, exactly like the curator. Idempotent: recording the same dataset again is a no-op.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from rlstream.curation.writer import MANIFEST, Manifest
from rlstream.errors import ConfigError
from rlstream.jsonl import read_scored
from rlstream.rollout import ScoredRollout
from rlstream.storage import DatasetRecord, LineageEdge, Store, rollout_group

_BATCH = 500


def dataset_rollout_ids(manifest: Manifest) -> set[str]:
    return {rid for entry in manifest.lineage for rid in entry.rollout_ids}


async def record_release(
    store: Store, dataset_dir: Path, scored: Iterable[Path] | Iterable[ScoredRollout]
) -> DatasetRecord:
    """Store the rollouts of ``dataset_dir`` (read from ``scored``) and release them in it."""
    manifest_path = Path(dataset_dir) / MANIFEST
    if not manifest_path.exists():
        raise ConfigError(f"{dataset_dir} has no {MANIFEST}: not a curated dataset")
    manifest = Manifest.model_validate_json(manifest_path.read_bytes())
    wanted = dataset_rollout_ids(manifest)
    found: dict[str, ScoredRollout] = {}
    pending: list[ScoredRollout] = []
    for r in _iter_rollouts(scored):
        if r.rollout_id in wanted and r.rollout_id not in found:
            found[r.rollout_id] = r
            pending.append(r)
            if len(pending) >= _BATCH:
                await store.save_rollouts(pending)
                pending = []
    if pending:
        await store.save_rollouts(pending)
    missing = wanted - set(found)
    if missing:
        raise ConfigError(
            f"{len(missing)} rollout(s) of dataset {manifest.dataset_id[:12]} are not in the"
            f" scored input (e.g. {sorted(missing)[0]})"
        )
    agents = Counter(rollout_group(r).agent for r in found.values())
    record = DatasetRecord(
        dataset_id=manifest.dataset_id,
        agent=agents.most_common(1)[0][0] if agents else "",
        reward_spec=",".join(manifest.reward_specs),
        manifest={"batch": manifest.model_dump(mode="json", exclude={"lineage"})},
        path=str(Path(dataset_dir).resolve()),
        n_rollouts=len(found),
    )
    ids = sorted(found)
    await store.release_dataset(record, ids)
    edges: list[LineageEdge] = []
    for rid in ids:
        label = rollout_group(found[rid]).label()
        edges += [
            LineageEdge(
                from_kind="dataset", from_id=record.dataset_id, to_kind="group", to_id=label
            ),
            LineageEdge(from_kind="group", from_id=label, to_kind="rollout", to_id=rid),
        ]
    await store.add_lineage(edges)
    stored = await store.get_dataset(record.dataset_id)
    assert stored is not None
    return stored


def _iter_rollouts(scored: Iterable[Path] | Iterable[ScoredRollout]) -> Iterable[ScoredRollout]:
    for item in scored:
        if isinstance(item, ScoredRollout):
            yield item
        else:
            yield from read_scored(Path(item))
