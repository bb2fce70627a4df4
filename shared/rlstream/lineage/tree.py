"""Lineage as a tree: model -> evaluation -> training run -> dataset (sha256) -> groups ->
rollouts -> conversations with their source (file:line or topic/partition/offset).

A conversation a registered model served (its transcript's ``model`` is that model's id,
as ``rlstream serve`` logs it) is derived from that model (migration 0007), so the walk
from a model trained on served conversations continues to the model that served them; a
model's own served conversations are listed in ``served`` (what it produced, not what it
learnt from).

Built from one recursive walk (``Store.lineage_of``) plus one query per kind for the
details a reader needs at each level. Each node appears once, under its most specific
parent (edges run from general to specific kinds, so the result is a tree).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, JsonValue

from rlstream.storage import Lineage, LineageKind, Store

_ORDER: dict[str, int] = {
    k: i
    for i, k in enumerate(
        ("promotion", "model", "evaluation", "run", "dataset", "group", "rollout", "conversation")
    )
}


class TreeNode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: LineageKind
    id: str
    details: dict[str, JsonValue] = {}
    children: tuple[TreeNode, ...] = ()


class LineageTree(BaseModel):
    """The tree plus flat facts: counts per kind and every conversation's source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    root: TreeNode
    counts: dict[str, int]
    conversations: tuple[dict[str, JsonValue], ...]
    #: a model root: the conversations it served (id and source), oldest id first
    served: tuple[dict[str, JsonValue], ...] = ()


async def build_tree(store: Store, kind: LineageKind, id: str) -> LineageTree:
    lineage = await store.lineage_of(kind, id)
    details = await _details(store, lineage)
    root: tuple[str, str] = (lineage.root.kind, lineage.root.id)

    def sort_key(node: tuple[str, str]) -> tuple[int, str]:
        return (_ORDER.get(node[0], 99), node[1])

    # each node hangs under its most specific parent: a rollout under its group rather
    # than the dataset, a run under the model's evaluation rather than the model
    parents: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for e in lineage.edges:
        parents.setdefault((e.to_kind, e.to_id), []).append((e.from_kind, e.from_id))
    parent_of = {node: max(ps, key=sort_key) for node, ps in parents.items() if node != root and ps}
    kids: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for child, parent in parent_of.items():
        kids.setdefault(parent, []).append(child)

    def build(node: tuple[str, str]) -> TreeNode:
        return TreeNode(
            kind=node[0],
            id=node[1],
            details=details.get(node, {}),
            children=tuple(build(c) for c in sorted(kids.get(node, []), key=sort_key)),
        )

    counts: dict[str, int] = {}
    for n in lineage.nodes:
        counts[n.kind] = counts.get(n.kind, 0) + 1
    return LineageTree(
        root=build(root),
        counts=counts,
        conversations=tuple(
            c.model_dump(mode="json", exclude_none=True) for c in lineage.conversations
        ),
        served=await served_by(store, id) if kind == "model" else (),
    )


_SERVED = """
SELECT conversation_id, source_kind AS kind, source_topic AS topic,
       source_partition AS partition, source_offset AS offset, source_file AS file,
       source_line AS line
FROM transcripts WHERE body->>'model' = $1 ORDER BY conversation_id
"""


async def served_by(store: Store, model_id: str) -> tuple[dict[str, JsonValue], ...]:
    """The stored conversations ``model_id`` produced (their transcript's ``model``)."""
    rows = await store.pool.fetch(_SERVED, model_id)
    return tuple(
        {"conversation_id": r["conversation_id"], "source": source_label(dict(r))} for r in rows
    )


async def _details(store: Store, lineage: Lineage) -> dict[tuple[str, str], dict[str, JsonValue]]:
    out: dict[tuple[str, str], dict[str, JsonValue]] = {}
    pool = store.pool

    async def rows(sql: str, kind: LineageKind) -> list[Any]:
        ids = sorted(lineage.ids(kind))
        return list(await pool.fetch(sql, ids)) if ids else []

    for r in await rows(
        "SELECT model_id, agent, path, metadata FROM models WHERE model_id = ANY($1::text[])",
        "model",
    ):
        out[("model", r["model_id"])] = {
            "agent": r["agent"],
            "path": r["path"],
            **(r["metadata"] or {}),
        }
    for r in await rows(
        "SELECT evaluation_id, decision, baseline_model, report FROM evaluations"
        " WHERE evaluation_id = ANY($1::text[])",
        "evaluation",
    ):
        summary = (r["report"] or {}).get("summary") or {}
        out[("evaluation", r["evaluation_id"])] = {
            "decision": r["decision"],
            "baseline": r["baseline_model"],
            **{
                k: summary.get(k)
                for k in ("metric", "delta_mean", "delta_ci_low", "delta_ci_high")
                if k in summary
            },
        }
    for r in await rows(
        "SELECT run_id, backend, method, status, artifact_path FROM runs WHERE run_id = ANY($1::text[])",
        "run",
    ):
        out[("run", r["run_id"])] = {
            "backend": r["backend"],
            "method": r["method"],
            "status": r["status"],
            "artifact_dir": r["artifact_path"],
        }
    for r in await rows(
        "SELECT dataset_id, reward_spec, path, n_rollouts FROM datasets WHERE dataset_id = ANY($1::text[])",
        "dataset",
    ):
        out[("dataset", r["dataset_id"])] = {
            "sha256": r["dataset_id"],
            "reward_spec": r["reward_spec"],
            "path": r["path"],
            "rollouts": r["n_rollouts"],
        }
    for r in await rows(
        "SELECT rollout_id, reward_spec, score, passed FROM rollouts WHERE rollout_id = ANY($1::text[])",
        "rollout",
    ):
        out[("rollout", r["rollout_id"])] = {
            "reward_spec": r["reward_spec"],
            "score": r["score"],
            "passed": r["passed"],
        }
    for c in lineage.conversations:
        out[("conversation", c.conversation_id)] = {"source": source_label(c.model_dump())}
    erasable: tuple[LineageKind, ...] = ("dataset", "run", "model")
    for kind in erasable:  # built from data an erasure removed since
        ids = sorted(lineage.ids(kind))
        for ident, impacts in (await store.erasure_impacts(kind, ids) if ids else {}).items():
            node = out.setdefault((kind, ident), {})
            node["erasures"] = [i.erasure_id for i in impacts]
            node["erasure_effects"] = [i.detail for i in impacts]
    return out


def source_label(source: dict[str, Any]) -> str:
    """``file:line`` or ``topic/partition/offset`` (what the issue asks lineage to show)."""
    if source.get("file"):
        return f"{source['file']}:{source.get('line')}"
    if source.get("topic"):
        return f"{source['topic']}/{source.get('partition')}/{source.get('offset')}"
    return str(source.get("kind") or "inline")
