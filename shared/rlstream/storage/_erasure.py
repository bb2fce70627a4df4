"""Erasure in Postgres: find one user's conversations, delete every row of them in one
transaction, leave digests and counts behind (migration 0006, :mod:`rlstream.erasure`).

Every lookup is by an index (a primary key, ``rollouts_conversation``, the GIN index on
the transcripts' metadata or on the turn buffers' deltas), so the cost follows the user's
rows, not the table's size. Group counters are decremented, a group with no rollout left
goes; a held-out key no rollout of its agent still has goes; lineage edges to the erased
rollouts and conversations go, and a dataset's edge to a group once none of the group's
rollouts remain in it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import asyncpg

from rlstream.storage._base import StoreBase
from rlstream.storage.records import (
    ErasedRollout,
    ErasureImpact,
    ErasureRecord,
    ErasureRows,
    ErasureTargets,
)

_ROLLOUTS = """
SELECT rollout_id, conversation_id, agent, reward_spec, task_key, score, passed, released_in
FROM rollouts WHERE conversation_id = ANY($1::text[]) ORDER BY rollout_id FOR UPDATE
"""

_LOCK_GROUPS = """
SELECT 1 FROM groups g JOIN unnest($1::text[], $2::text[], $3::text[]) AS x(a, s, k)
    ON g.agent = x.a AND g.reward_spec = x.s AND g.task_key = x.k
ORDER BY g.agent, g.reward_spec, g.task_key FOR UPDATE OF g
"""

# counts stay consistent (passes <= n) because every erased rollout was counted in its group
_DECREMENT = """
UPDATE groups g SET n = greatest(g.n - x.n, 0),
    passes = least(greatest(g.passes - x.p, 0), greatest(g.n - x.n, 0)),
    sum_score = g.sum_score - x.s, updated_at = now()
FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::float8[])
    AS x(a, sp, k, n, p, s)
WHERE g.agent = x.a AND g.reward_spec = x.sp AND g.task_key = x.k
"""

_EMPTY_GROUPS = """
DELETE FROM groups g USING unnest($1::text[], $2::text[], $3::text[]) AS x(a, s, k)
WHERE g.agent = x.a AND g.reward_spec = x.s AND g.task_key = x.k AND g.n <= 0
RETURNING g.agent, g.reward_spec, g.task_key
"""

_GROUP_EDGES = """
DELETE FROM lineage_edges e
USING unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS x(d, l, a, s, k)
WHERE e.from_kind = 'dataset' AND e.from_id = x.d AND e.to_kind = 'group' AND e.to_id = x.l
  AND NOT EXISTS (SELECT 1 FROM rollouts r WHERE r.released_in = x.d AND r.agent = x.a
                  AND r.reward_spec = x.s AND r.task_key = x.k)
"""

_HELDOUT = """
DELETE FROM heldout_keys h USING unnest($1::text[], $2::text[]) AS x(a, k)
WHERE h.agent = x.a AND h.task_key = x.k
  AND NOT EXISTS (SELECT 1 FROM rollouts r WHERE r.agent = x.a AND r.task_key = x.k)
RETURNING h.agent, h.task_key
"""

_TOMBSTONES = """
INSERT INTO erased_ids (digest, kind, erasure_id)
SELECT erased_digest($1, i), $1, $3 FROM unnest($2::text[]) AS i
ON CONFLICT (digest) DO NOTHING
"""

# Runs and models built from the datasets, over explicit edges and the id columns.
_UP = """
WITH RECURSIVE edges(from_kind, from_id, to_kind, to_id) AS (
    SELECT from_kind, from_id, to_kind, to_id FROM lineage_edges
        WHERE from_kind IN ('run', 'model') AND to_kind IN ('dataset', 'run', 'model')
    UNION ALL SELECT 'run', run_id, 'dataset', dataset_id FROM runs WHERE dataset_id IS NOT NULL
    UNION ALL SELECT 'model', model_id, 'run', run_id FROM models WHERE run_id IS NOT NULL
),
up(kind, id) AS (
    SELECT 'dataset'::text, d FROM unnest($1::text[]) AS d
    UNION
    SELECT e.from_kind, e.from_id FROM up JOIN edges e ON e.to_kind = up.kind AND e.to_id = up.id
)
SELECT kind, id FROM up WHERE kind IN ('run', 'model') ORDER BY kind, id
"""


def erased_digest(kind: str, id: str) -> str:
    """What ``erased_ids`` keeps of an erased id (the SQL function of the same name)."""
    return hashlib.sha256(f"{kind}:{id}".encode()).hexdigest()


def _n(status: str) -> int:
    return int(str(status).rsplit(" ", 1)[-1])


def _label(agent: str, spec: str, key: str) -> str:
    """:meth:`rlstream.storage.records.GroupKey.label`, the lineage ``group`` node id."""
    return json.dumps([agent, spec, key], separators=(",", ":"))


def _match(
    table: str, doc_expr: str, docs: Sequence[Any], forms: Sequence[str], id_cols: Sequence[str]
) -> tuple[str, list[Any]]:
    """(SQL, args) selecting ``conversation_id`` of ``table`` rows whose ``doc_expr``
    contains one of ``docs``, or whose column in ``id_cols`` is one of ``forms``. Each
    condition is one index lookup; OR makes a bitmap union of them."""
    args: list[Any] = []
    conds = []
    if id_cols:
        args.append(list(forms))
        conds += [f"{c} = ANY($1::text[])" for c in id_cols]
    for d in docs:
        args.append(d)
        conds.append(f"{doc_expr} @> ${len(args)}::jsonb")
    where = " OR ".join(conds) or "false"
    return f"SELECT conversation_id FROM {table} WHERE {where} ORDER BY conversation_id", args


class ErasureOps(StoreBase):
    # ---- finding -----------------------------------------------------------------------

    async def match_erasure(
        self,
        forms: Sequence[str],
        docs: Sequence[dict[str, Any]],
        *,
        by_id: bool,
        by_agent: bool,
        limit: int | None = None,
    ) -> ErasureTargets:
        """Stored conversations (and turn buffers) to erase: an id or agent among ``forms``
        (``by_id``/``by_agent``), or metadata containing one of ``docs`` (``{field: form}``).
        At most ``limit`` of each (erasure goes in batches)."""
        lim = f" LIMIT {int(limit)}" if limit else ""
        ids = (["conversation_id"] if by_id else []) + (["agent"] if by_agent else [])
        sql, args = _match("transcripts", "(body -> 'metadata')", docs, forms, ids)
        rows = await self._pool.fetch(sql + lim, *args)
        # a buffer holds raw deltas: the agent is a metadata key there
        b_docs = [[d] for d in docs] + ([[{"agent": f}] for f in forms] if by_agent else [])
        expr = "jsonb_path_query_array(turns, '$[*].delta.metadata')"
        b_ids = ["conversation_id"] if by_id else []
        sql, args = _match("turn_buffers", expr, b_docs, forms, b_ids)
        buffers = await self._pool.fetch(sql + lim, *args)
        return ErasureTargets(
            conversation_ids=tuple(str(r[0]) for r in rows),
            buffer_ids=tuple(str(r[0]) for r in buffers),
        )

    async def buffers_among(self, conversation_ids: Sequence[str]) -> set[str]:
        """Which of these conversations have a turn buffer (a dry run's count)."""
        rows = await self._pool.fetch(
            "SELECT conversation_id FROM turn_buffers WHERE conversation_id = ANY($1::text[])",
            list(conversation_ids),
        )
        return {str(r[0]) for r in rows}

    async def erasure_rollouts(self, conversation_ids: Sequence[str]) -> list[ErasedRollout]:
        """The rollouts of these conversations (what a dry run reports)."""
        rows = await self._pool.fetch(_ROLLOUTS.replace(" FOR UPDATE", ""), list(conversation_ids))
        return [ErasedRollout.model_validate(dict(r)) for r in rows]

    async def built_from(self, dataset_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """(run ids, model ids) trained on these datasets, directly or through an earlier
        model (a run that started from it)."""
        rows = await self._pool.fetch(_UP, sorted(set(dataset_ids))) if dataset_ids else []
        runs = [str(r["id"]) for r in rows if r["kind"] == "run"]
        models = [str(r["id"]) for r in rows if r["kind"] == "model"]
        return runs, models

    async def aliases_of(self, model_ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """(agent, alias, model id) of every alias that names one of ``model_ids``."""
        rows = await self._pool.fetch(
            "SELECT agent, alias, model_id FROM model_aliases WHERE model_id = ANY($1::text[])"
            " ORDER BY agent, alias",
            list(model_ids),
        )
        return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]

    async def dataset_locations(self, dataset_ids: Sequence[str]) -> list[tuple[str, str]]:
        rows = await self._pool.fetch(
            "SELECT dataset_id, path FROM datasets WHERE dataset_id = ANY($1::text[])"
            " ORDER BY dataset_id",
            list(dataset_ids),
        )
        return [(str(r[0]), str(r[1])) for r in rows]

    async def run_locations(self, run_ids: Sequence[str]) -> list[tuple[str, str | None, str]]:
        """(run id, artifact path, status) of these runs."""
        rows = await self._pool.fetch(
            "SELECT run_id, artifact_path, status FROM runs WHERE run_id = ANY($1::text[])"
            " ORDER BY run_id",
            list(run_ids),
        )
        return [(str(r[0]), r[1], str(r[2])) for r in rows]

    # ---- erasing -----------------------------------------------------------------------

    async def erase_rows(
        self, erasure_id: str, conversation_ids: Sequence[str], buffer_ids: Sequence[str]
    ) -> ErasureRows:
        """Delete every row of these conversations in one transaction and record digests of
        their ids under ``erasure_id``; return what went (with the ids, for Redis and files:
        the caller keeps them in memory only)."""
        cids = sorted(set(conversation_ids))
        bids = sorted(set(buffer_ids) | set(cids))
        async with self._pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "SELECT 1 FROM transcripts WHERE conversation_id = ANY($1::text[])"
                " ORDER BY conversation_id FOR UPDATE",
                cids,
            )
            rollouts = [
                ErasedRollout.model_validate(dict(r)) for r in await conn.fetch(_ROLLOUTS, cids)
            ]
            rids = [r.rollout_id for r in rollouts]
            groups_removed = await _groups(conn, rollouts)
            edges = 0
            for sql, ids in (
                ("to_kind = 'rollout' AND to_id = ANY($1::text[])", rids),
                ("from_kind = 'rollout' AND from_id = ANY($1::text[])", rids),
                ("to_kind = 'conversation' AND to_id = ANY($1::text[])", cids),
            ):
                if ids:
                    edges += _n(await conn.execute(f"DELETE FROM lineage_edges WHERE {sql}", ids))
            n_rollouts = _n(
                await conn.execute(
                    "DELETE FROM rollouts WHERE conversation_id = ANY($1::text[])", cids
                )
            )
            released = [r for r in rollouts if r.released_in]
            pairs = sorted(
                {(r.released_in or "", r.agent, r.reward_spec, r.task_key) for r in released}
            )
            if pairs:
                cols = [list(c) for c in zip(*pairs, strict=True)]
                labels = [_label(a, s, k) for _, a, s, k in pairs]
                edges += _n(await conn.execute(_GROUP_EDGES, cols[0], labels, *cols[1:]))
            datasets = sorted({r.released_in for r in released if r.released_in})
            if datasets:
                await conn.execute(
                    "UPDATE datasets d SET n_rollouts = (SELECT count(*) FROM rollouts r"
                    " WHERE r.released_in = d.dataset_id) WHERE d.dataset_id = ANY($1::text[])",
                    datasets,
                )
            keys = sorted({(r.agent, r.task_key) for r in rollouts})
            heldout = []
            if keys:
                a, k = (list(c) for c in zip(*keys, strict=True))
                heldout = await conn.fetch(_HELDOUT, a, k)
            n_transcripts = _n(
                await conn.execute(
                    "DELETE FROM transcripts WHERE conversation_id = ANY($1::text[])", cids
                )
            )
            n_buffers = _n(
                await conn.execute(
                    "DELETE FROM turn_buffers WHERE conversation_id = ANY($1::text[])", bids
                )
            )
            await conn.execute(_TOMBSTONES, "conversation", cids, erasure_id)
            await conn.execute(_TOMBSTONES, "rollout", rids, erasure_id)
        return ErasureRows(
            transcripts=n_transcripts,
            rollouts=n_rollouts,
            released_rollouts=len(released),
            turn_buffers=n_buffers,
            lineage_edges=edges,
            groups_removed=tuple(groups_removed),
            heldout_keys_removed=len(heldout),
            datasets=tuple(datasets),
            erased=tuple(rollouts),
            conversation_ids=tuple(cids),
        )

    # ---- the record --------------------------------------------------------------------

    async def begin_erasure(self, record: ErasureRecord) -> None:
        await self._pool.execute(
            "INSERT INTO erasures (erasure_id, selector, field, policy) VALUES ($1, $2, $3, $4)",
            record.erasure_id,
            record.selector,
            record.field,
            record.policy,
        )

    async def finish_erasure(self, record: ErasureRecord, impacts: Sequence[ErasureImpact]) -> None:
        """The outcome (counts, what was affected, what is left to do) and the impacts."""
        async with self._pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "UPDATE erasures SET status = $2, counts = $3, affected = $4, pending = $5,"
                " finished_at = now() WHERE erasure_id = $1",
                record.erasure_id,
                record.status,
                record.counts,
                record.affected,
                list(record.pending),
            )
            for i in impacts:
                await conn.execute(
                    "INSERT INTO erasure_impacts (erasure_id, kind, id, detail)"
                    " VALUES ($1, $2, $3, $4) ON CONFLICT (erasure_id, kind, id)"
                    " DO UPDATE SET detail = excluded.detail",
                    record.erasure_id,
                    i.kind,
                    i.id,
                    i.detail,
                )

    async def get_erasure(self, erasure_id: str) -> ErasureRecord | None:
        row = await self._pool.fetchrow(
            "SELECT erasure_id, selector, field, status, counts, affected, policy, pending,"
            " created_at, finished_at FROM erasures WHERE erasure_id = $1",
            erasure_id,
        )
        return None if row is None else ErasureRecord.model_validate(dict(row))

    async def erased_digests(self, erasure_id: str) -> set[str]:
        """Every id digest an erasure left (to finish its file work later)."""
        rows = await self._pool.fetch(
            "SELECT digest FROM erased_ids WHERE erasure_id = $1", erasure_id
        )
        return {str(r[0]) for r in rows}

    async def erasure_impacts(
        self, kind: str, ids: Sequence[str]
    ) -> dict[str, list[ErasureImpact]]:
        """For each of ``ids`` of ``kind`` (dataset, run, model) the erasures that touched it."""
        rows = await self._pool.fetch(
            "SELECT i.erasure_id, i.kind, i.id, i.detail, e.created_at FROM erasure_impacts i"
            " JOIN erasures e USING (erasure_id) WHERE i.kind = $1 AND i.id = ANY($2::text[])"
            " ORDER BY e.created_at, i.erasure_id",
            kind,
            list(ids),
        )
        out: dict[str, list[ErasureImpact]] = {}
        for r in rows:
            imp = ErasureImpact(erasure_id=r[0], kind=r[1], id=r[2], detail=r[3])
            out.setdefault(imp.id, []).append(imp)
        return out

    async def erased_among(self, conversation_ids: Sequence[str]) -> set[str]:
        """Which of these conversation ids were erased (never to be stored again)."""
        by_digest = {erased_digest("conversation", c): c for c in conversation_ids}
        rows = await self._pool.fetch(
            "SELECT digest FROM erased_ids WHERE digest = ANY($1::text[])", list(by_digest)
        )
        return {by_digest[str(r[0])] for r in rows}

    async def dataset_manifest(self, dataset_id: str) -> dict[str, Any] | None:
        value = await self._pool.fetchval(
            "SELECT manifest FROM datasets WHERE dataset_id = $1", dataset_id
        )
        return None if value is None else dict(value)

    async def revise_dataset(
        self, dataset_id: str, revision: int, manifest: dict[str, Any], revoked_by: str | None
    ) -> None:
        """A dataset's new revision (files rewritten) or its revocation."""
        await self._pool.execute(
            "UPDATE datasets SET revision = greatest(revision, $2), revoked_by ="
            " coalesce(revoked_by, $4), manifest = $3 WHERE dataset_id = $1",
            dataset_id,
            revision,
            manifest,
            revoked_by,
        )


async def _groups(conn: asyncpg.Connection, rollouts: Sequence[ErasedRollout]) -> list[Any]:
    """Take the erased rollouts out of their groups' counters; drop groups left empty."""
    agg: dict[tuple[str, str, str], list[float]] = {}
    for r in rollouts:
        a = agg.setdefault((r.agent, r.reward_spec, r.task_key), [0, 0, 0.0])
        a[0] += 1
        a[1] += int(r.passed)
        a[2] += r.score
    if not agg:
        return []
    keys = sorted(agg)
    cols = [[k[i] for k in keys] for i in range(3)]
    await conn.execute(_LOCK_GROUPS, *cols)
    await conn.execute(
        _DECREMENT,
        *cols,
        [int(agg[k][0]) for k in keys],
        [int(agg[k][1]) for k in keys],
        [agg[k][2] for k in keys],
    )
    rows = await conn.fetch(_EMPTY_GROUPS, *cols)
    return sorted((str(r[0]), str(r[1]), str(r[2])) for r in rows)
