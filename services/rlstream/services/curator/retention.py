"""The curator's retention task: apply ``RLSTREAM_RETENTION_*`` every interval.

The curator runs it because it owns what retention prunes: the pending pool, the release
folder and the runs it launched. A pass that fails (Postgres away, a disk error) is logged
and tried again next interval; every step is idempotent, so replicas may overlap.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from rlstream.observability.metrics import RETENTION_REMOVED
from rlstream.retention import KINDS, RetentionReport, apply_retention
from rlstream.services.curator.settings import CuratorSettings

log = logging.getLogger("rlstream.services.curator.retention")

#: the first pass runs this soon after the start (a curator restarted more often than the
#: interval would otherwise never apply it)
FIRST_PASS_AFTER_S = 60.0


async def retention_pass(store: Any, settings: CuratorSettings) -> RetentionReport | None:
    """One pass; counts go to ``rlstream_retention_removed_total{kind}``. None: it failed."""
    try:
        report = await apply_retention(
            store,
            settings.retention_policy(),
            dataset_roots=[settings.datasets_path()],
            run_roots=[settings.runs_path()],
        )
    except Exception:
        log.warning("retention pass failed; will retry next interval", exc_info=True)
        return None
    for kind, n in report.removed.items():
        if n:
            RETENTION_REMOVED.labels(kind).inc(n)
    log.info(
        "retention pass",
        extra={"removed": dict(report.removed), "bytes": dict(report.bytes),
               "skipped": {k: v for k, v in report.skipped.items() if v}},
    )  # fmt: skip
    return report


async def retention_loop(rt: Any, settings: CuratorSettings) -> None:
    """Forever: wait, pass. The counter's series exist (at 0) from the start."""
    for kind in KINDS:
        RETENTION_REMOVED.labels(kind)
    delay = min(FIRST_PASS_AFTER_S, settings.retention_interval_s)
    while True:
        await asyncio.sleep(delay)
        delay = settings.retention_interval_s
        await retention_pass(rt.store, settings)
