"""Lineage: edges ``derived -> input`` and walks over them.

Explicit edges (model -> run -> dataset -> group -> rollout) live in ``lineage_edges``;
the edges the rows already imply (dataset -> rollout via ``released_in``, rollout ->
conversation) come from the ``lineage_all`` view, so a walk never misses them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from rlstream.storage._base import StoreBase
from rlstream.storage.records import (
    ConversationSource,
    Lineage,
    LineageEdge,
    LineageKind,
    LineageNode,
)

_ADD = """
INSERT INTO lineage_edges (from_kind, from_id, to_kind, to_id)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
ON CONFLICT DO NOTHING
"""

# ``a`` is the side the walk starts from, ``b`` the side it reaches.
_WALK = """
WITH RECURSIVE walk(a_kind, a_id, b_kind, b_id, depth) AS (
    SELECT NULL::text, NULL::text, $1::text, $2::text, 0
    UNION
    SELECT w.b_kind, w.b_id, e.{b}_kind, e.{b}_id, w.depth + 1
    FROM walk w JOIN lineage_all e ON e.{a}_kind = w.b_kind AND e.{a}_id = w.b_id
    WHERE w.depth < $3
)
SELECT a_kind, a_id, b_kind, b_id, depth FROM walk
"""

_SOURCES = """
SELECT conversation_id, source_kind, source_topic, source_partition, source_offset,
       source_file, source_line
FROM transcripts WHERE conversation_id = ANY($1::text[]) ORDER BY conversation_id
"""


class LineageOps(StoreBase):
    async def add_lineage(self, edges: Sequence[LineageEdge]) -> int:
        """Record edges (idempotent); return how many were new."""
        unique = sorted({(e.from_kind, e.from_id, e.to_kind, e.to_id) for e in edges})
        if not unique:
            return 0
        cols = [list(c) for c in zip(*unique, strict=True)]
        status = await self._pool.execute(_ADD, *cols)
        return int(str(status).rsplit(" ", 1)[-1])

    async def lineage_of(
        self,
        kind: LineageKind,
        id: str,
        *,
        direction: Literal["down", "up"] = "down",
        max_depth: int = 16,
    ) -> Lineage:
        """Walk from ``(kind, id)``: ``down`` to its inputs (a model's run, dataset, groups,
        rollouts, conversations and their source offsets), ``up`` to what was built from it
        (which datasets and models used a conversation)."""
        a, b = ("from", "to") if direction == "down" else ("to", "from")
        rows = await self._pool.fetch(_WALK.format(a=a, b=b), kind, id, max_depth)
        depth: dict[tuple[str, str], int] = {}
        edges: set[LineageEdge] = set()
        for r in rows:
            node = (r["b_kind"], r["b_id"])
            depth[node] = min(depth.get(node, r["depth"]), r["depth"])
            if r["a_kind"] is None:
                continue
            src, dst = (r["a_kind"], r["a_id"]), node
            if direction == "up":
                src, dst = dst, src
            edges.add(LineageEdge(from_kind=src[0], from_id=src[1], to_kind=dst[0], to_id=dst[1]))
        nodes = sorted(
            (LineageNode(kind=k, id=i, depth=d) for (k, i), d in depth.items()),
            key=lambda n: (n.depth, n.kind, n.id),
        )
        conv_ids = [n.id for n in nodes if n.kind == "conversation"]
        sources = await self._pool.fetch(_SOURCES, conv_ids) if conv_ids else []
        return Lineage(
            root=nodes[0],
            direction=direction,
            nodes=tuple(nodes),
            edges=tuple(sorted(edges, key=lambda e: (e.from_kind, e.from_id, e.to_kind, e.to_id))),
            conversations=tuple(
                ConversationSource(
                    conversation_id=s["conversation_id"],
                    kind=s["source_kind"],
                    topic=s["source_topic"],
                    partition=s["source_partition"],
                    offset=s["source_offset"],
                    file=s["source_file"],
                    line=s["source_line"],
                )
                for s in sources
            ),
        )
