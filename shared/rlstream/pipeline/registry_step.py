"""The demo's promote and lineage stages on the embedded Postgres (registry-promote's API).

The same calls as the evaluator service: the batch dataset is recorded (so lineage reaches
its conversations), its held-out keys are recorded, the run, evaluation and candidate model
are stored, and the gate's decision is applied (promotion to ``champion`` or a
``gate=rejected`` tag). The demo's baseline is the base model, so a champion left in the
data dir by an earlier run with other weights is not overwritten (the refusal is shown).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlstream.curation.writer import MANIFEST, Manifest
from rlstream.lineage import build_tree, record_release
from rlstream.registry import CandidateRun, Registry, Verdict, record_evaluation, settle
from rlstream.rollout import ScoredRollout
from rlstream.settings import Settings
from rlstream.storage import Store, resolve_dsn, upgrade


@dataclass(frozen=True)
class Promotion:
    model_id: str
    evaluation_id: str
    promoted: bool
    #: why a ``promote`` was not applied (a champion from an earlier run that this
    #: evaluation, made against the base model, never compared with)
    refusal: str | None
    lineage_counts: dict[str, int]
    lineage: dict[str, Any]


async def promote_and_trace(
    settings: Settings,
    *,
    dataset_dir: Path,
    scored: Path,
    run: CandidateRun,
    adapter_dir: Path,
    baseline_model: str,
    verdict: Verdict,
    heldout_share: float,
    baseline_champion: str | None = None,
    served: Sequence[ScoredRollout] = (),
) -> Promotion:
    """``baseline_champion``: the champion the candidate was compared with (None: the base
    model); ``served``: graded conversations a model served, stored so lineage links each
    to the model that produced it (``rlstream demo --cycles``)."""
    dsn = resolve_dsn(settings)
    await upgrade(dsn)
    store = await Store.connect(dsn, max_size=4)
    try:
        if served:
            await store.save_rollouts(list(served))
        dataset = await record_release(store, dataset_dir, [scored])
        manifest = Manifest.model_validate_json((dataset_dir / MANIFEST).read_bytes())
        if manifest.heldout_task_keys and heldout_share > 0:
            for spec in manifest.reward_specs:
                await store.hold_out(dataset.agent, spec, manifest.heldout_task_keys, heldout_share)
        registry = Registry(store)
        event = await record_evaluation(
            registry,
            run,
            adapter_dir,
            baseline_model=baseline_model,
            baseline_champion=baseline_champion,  # None: the demo's base model
            verdict=verdict,
        )
        event, promoted = await settle(registry, event)
        stored = await store.get_evaluation(event.evaluation_id)
        tree = await build_tree(store, "model", event.model_id)
        return Promotion(
            model_id=event.model_id,
            evaluation_id=event.evaluation_id,
            promoted=promoted is not None,
            refusal=stored.refusal if stored and promoted is None else None,
            lineage_counts=tree.counts,
            lineage=tree.model_dump(mode="json"),
        )
    finally:
        await store.close()
