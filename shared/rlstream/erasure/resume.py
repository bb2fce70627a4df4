"""Finishing an erasure later: its file work, from the digests its record keeps."""

from __future__ import annotations

import time

from rlstream.erasure.apply import Eraser
from rlstream.erasure.errors import UnknownErasureError
from rlstream.erasure.plan import DatasetChange, ErasurePlan, ErasureReport, plan_effects
from rlstream.erasure.settings import DatasetPolicy
from rlstream.storage import ErasureImpact


async def resume(eraser: Eraser, erasure_id: str) -> ErasureReport:
    """Finish an erasure's file work (a release folder that was not reachable, a run that
    was still open) from the digests its record keeps; its other pending steps (Redis,
    topics) stay listed: their ids are gone, and Redis keys and topic records expire."""
    t0 = time.perf_counter()
    ops = eraser.ops
    record = await ops.get_erasure(erasure_id)
    if record is None:
        raise UnknownErasureError(f"no erasure {erasure_id!r} is recorded")
    affected = record.affected
    datasets = [str(d) for d in affected.get("datasets") or []]  # type: ignore[union-attr]
    runs = [str(r) for r in affected.get("runs") or []]  # type: ignore[union-attr]
    action: DatasetPolicy = "revoke" if record.policy.get("datasets") == "revoke" else "rewrite"
    plan = ErasurePlan(
        datasets=tuple(
            DatasetChange(dataset_id=d, path=p, action=action)
            for d, p in await ops.dataset_locations(datasets)
        ),
        runs=plan_effects([], [], await ops.run_locations(runs), [], [], datasets="rewrite",
                          champion="keep").runs,
        models=tuple(str(m) for m in affected.get("models") or []),  # type: ignore[union-attr]
        champions=(),
    )  # fmt: skip
    counts = dict(record.counts)
    pending = [
        {str(k): str(v) for k, v in p.items()}
        for p in record.pending
        if p.get("kind") in ("redis", "topics")
    ]
    plan = await eraser.apply_files(
        plan, erasure_id, await ops.erased_digests(erasure_id), counts, pending, False
    )
    done = pending
    report = ErasureReport(
        erasure_id=erasure_id, dry_run=False, selector=f"resume of {record.selector}",
        status="partial" if done else "done", counts=counts, plan=plan, pending=tuple(done),
        seconds=time.perf_counter() - t0,
    )  # fmt: skip
    await ops.finish_erasure(
        record.model_copy(
            update={"status": report.status, "counts": counts, "pending": tuple(done)}
        ),
        [
            ErasureImpact(erasure_id=erasure_id, kind="dataset", id=d.dataset_id,
                          detail={"outcome": d.outcome, "rows_removed": d.rows_removed,
                                  "revision": d.revision, "action": d.action})
            for d in plan.datasets
        ],
    )  # fmt: skip
    return report
