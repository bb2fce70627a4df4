"""What retention may remove: the selections, in SQL, behind :mod:`rlstream.retention`.

Rows (closed turn buffers, pending rollouts) are counted or deleted here. Files (dataset
revisions, run folders) are only *listed* here; :mod:`rlstream.retention.files` removes
them. Nothing in the lineage of a model that holds an alias or was ever promoted (a
rollback may restore it) is listed: those models, their runs and their datasets, walked
over ``lineage_edges`` and the ``models.run_id`` / ``runs.dataset_id`` columns.
"""

from __future__ import annotations

from datetime import timedelta

from rlstream.storage._base import StoreBase

# The models a rollback or a deploy may still need, and everything of theirs they came from
# (model -> run -> dataset, and model -> model where a run started from an earlier model).
_KEPT = """
WITH RECURSIVE kept_models(id) AS (
    SELECT model_id FROM model_aliases
    UNION SELECT model_id FROM promotions
    UNION SELECT previous_model_id FROM promotions WHERE previous_model_id IS NOT NULL
),
edges(from_kind, from_id, to_kind, to_id) AS (
    SELECT from_kind, from_id, to_kind, to_id FROM lineage_edges
        WHERE to_kind IN ('model', 'run', 'dataset')
    UNION ALL SELECT 'model', model_id, 'run', run_id FROM models WHERE run_id IS NOT NULL
    UNION ALL SELECT 'run', run_id, 'dataset', dataset_id FROM runs WHERE dataset_id IS NOT NULL
),
kept(kind, id) AS (
    SELECT 'model'::text, id FROM kept_models
    UNION
    SELECT e.to_kind, e.to_id FROM kept k JOIN edges e ON e.from_kind = k.kind AND e.from_id = k.id
)
"""

# A run whose outcome is not final yet (launched, started, or succeeded and not evaluated)
# may still read its dataset, and its model may still become the champion.
_OPEN_RUN = """
u.status NOT IN ('failed', 'over_budget')
AND NOT EXISTS (SELECT 1 FROM evaluations v WHERE v.run_id = u.run_id)
"""

_DATASETS = f"""{_KEPT},
ranked AS (
    SELECT dataset_id, path, created_at, row_number() OVER (
        PARTITION BY agent ORDER BY created_at DESC, dataset_id DESC) AS newest
    FROM datasets
)
SELECT d.dataset_id, d.path FROM ranked d
WHERE d.newest > $1 AND d.created_at < now() - $2::interval
  AND NOT EXISTS (SELECT 1 FROM kept k WHERE k.kind = 'dataset' AND k.id = d.dataset_id)
  AND NOT EXISTS (SELECT 1 FROM runs u WHERE u.dataset_id = d.dataset_id AND {_OPEN_RUN})
ORDER BY d.created_at, d.dataset_id
"""

# Failed (or refused for budget) runs, and runs the gate rejected and never passed.
_RUNS = f"""{_KEPT}
SELECT u.run_id, u.artifact_path FROM runs u
WHERE u.artifact_path IS NOT NULL
  AND (u.status IN ('failed', 'over_budget') OR EXISTS (
        SELECT 1 FROM evaluations v WHERE v.run_id = u.run_id AND v.decision = 'reject'))
  AND NOT EXISTS (
        SELECT 1 FROM evaluations v WHERE v.run_id = u.run_id AND v.decision = 'promote')
  AND greatest(u.updated_at, (SELECT max(v.created_at) FROM evaluations v
        WHERE v.run_id = u.run_id)) < now() - $1::interval
  AND NOT EXISTS (SELECT 1 FROM kept k WHERE k.kind = 'run' AND k.id = u.run_id)
ORDER BY u.updated_at, u.run_id
"""

_KEPT_MODEL_PATHS = f"""{_KEPT}
SELECT m.path FROM models m
WHERE m.path IS NOT NULL AND EXISTS (
    SELECT 1 FROM kept k WHERE k.kind = 'model' AND k.id = m.model_id)
ORDER BY m.path
"""

_PENDING = "released_in IS NULL AND created_at < now() - $1::interval"

_DELETE_PENDING = f"""
WITH doomed AS (
    SELECT rollout_id FROM rollouts WHERE {_PENDING}
    ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED
)
DELETE FROM rollouts r USING doomed d
WHERE r.rollout_id = d.rollout_id AND r.released_in IS NULL
"""


def _rows(status: str) -> int:
    return int(str(status).rsplit(" ", 1)[-1])


class RetentionOps(StoreBase):
    async def count_closed_buffers(self, older_than: timedelta) -> int:
        """How many buffers :meth:`purge_closed_buffers` would delete now (dry run)."""
        n = await self._pool.fetchval(
            "SELECT count(*) FROM turn_buffers WHERE closed AND closed_at < now() - $1::interval",
            older_than,
        )
        return int(n)

    async def count_pending_rollouts(self, older_than: timedelta) -> int:
        """Rollouts never released and stored longer ago than ``older_than``."""
        sql = f"SELECT count(*) FROM rollouts WHERE {_PENDING}"
        return int(await self._pool.fetchval(sql, older_than))

    async def purge_pending_rollouts(self, older_than: timedelta, *, batch: int = 5000) -> int:
        """Delete rollouts never released and stored longer ago than ``older_than``; return
        how many. In batches (short transactions); rows a release holds locked are skipped
        and a rollout released meanwhile is never deleted. Group counters (``groups``) are
        lifetime counts and stay as they are."""
        total = 0
        while True:
            n = _rows(await self._pool.execute(_DELETE_PENDING, older_than, batch))
            total += n
            if n < batch:
                return total

    async def prunable_datasets(
        self, keep_newest: int, older_than: timedelta
    ) -> list[tuple[str, str]]:
        """(dataset id, path) of the releases beyond each agent's ``keep_newest`` newest,
        created longer ago than ``older_than``, that no kept model's lineage and no run whose
        outcome is open (not failed, not evaluated) references; oldest first."""
        rows = await self._pool.fetch(_DATASETS, keep_newest, older_than)
        return [(str(r[0]), str(r[1])) for r in rows]

    async def expired_run_artifacts(self, older_than: timedelta) -> list[tuple[str, str]]:
        """(run id, artifact path) of runs that failed, were refused for budget, or that the
        gate rejected (and no evaluation passed), last changed longer ago than
        ``older_than`` and not in any kept model's lineage; oldest first."""
        rows = await self._pool.fetch(_RUNS, older_than)
        return [(str(r[0]), str(r[1])) for r in rows]

    async def kept_model_paths(self) -> list[str]:
        """Weights paths of the models a deploy or rollback may still need: no folder that
        holds one is ever removed, whatever run row points at it."""
        return [str(r[0]) for r in await self._pool.fetch(_KEPT_MODEL_PATHS)]
