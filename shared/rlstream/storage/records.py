"""Rows that cross the storage boundary, as frozen pydantic models.

Services and the CLI exchange these with :class:`rlstream.storage.Store`; nobody outside
the storage package sees asyncpg records.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

LineageKind = Literal[
    "model", "run", "dataset", "group", "rollout", "conversation", "evaluation", "promotion"
]
Alias = Literal["champion", "challenger"]
PromotionKind = Literal["promote", "rollback"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GroupKey(_Frozen):
    """What makes rollouts one group: the same agent, reward spec and task key."""

    agent: str
    reward_spec: str
    task_key: str

    def label(self) -> str:
        """A stable, unambiguous id for lineage ``group`` nodes: a compact JSON array."""
        return json.dumps([self.agent, self.reward_spec, self.task_key], separators=(",", ":"))


class GroupStats(_Frozen):
    """Running counters for one group: ``n`` rollouts, ``passes`` of them passed."""

    key: GroupKey
    n: int
    passes: int
    sum_score: float

    @property
    def pass_rate(self) -> float:
        return self.passes / self.n if self.n else 0.0


class DatasetRecord(_Frozen):
    """A released dataset. ``dataset_id`` is the sha256 of its content."""

    dataset_id: str
    agent: str
    reward_spec: str
    manifest: dict[str, JsonValue]
    path: str
    n_rollouts: int = 0
    created_at: datetime | None = None


class LineageEdge(_Frozen):
    """``from`` was derived from ``to`` (model -> run -> dataset -> group -> rollout -> ...)."""

    from_kind: LineageKind
    from_id: str
    to_kind: LineageKind
    to_id: str


class LineageNode(_Frozen):
    kind: LineageKind
    id: str
    depth: int


class ConversationSource(_Frozen):
    """Where a conversation entered rlstream: topic/partition/offset or file/line."""

    conversation_id: str
    kind: str
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    file: str | None = None
    line: int | None = None


class Lineage(_Frozen):
    """Everything reachable from ``root`` along lineage edges, plus the sources of the
    conversations at the bottom (``direction="down"``) or the artefacts built from it
    (``direction="up"``)."""

    root: LineageNode
    direction: Literal["down", "up"]
    nodes: tuple[LineageNode, ...]
    edges: tuple[LineageEdge, ...]
    conversations: tuple[ConversationSource, ...] = ()

    def ids(self, kind: LineageKind) -> set[str]:
        return {n.id for n in self.nodes if n.kind == kind}


class RunRecord(_Frozen):
    run_id: str
    agent: str
    backend: str
    method: str
    status: str
    dataset_id: str | None = None
    image: str | None = None
    argv_hash: str | None = None
    backend_version: str | None = None
    spec: dict[str, JsonValue] = Field(default_factory=dict)
    metrics: dict[str, JsonValue] = Field(default_factory=dict)
    artifact_path: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


class EvaluationRecord(_Frozen):
    """One gate decision. ``baseline_champion``: the champion the candidate was compared
    with (None: no champion, the base model), which a promotion compares-and-sets;
    ``refusal``: why a ``promote`` was not applied (the champion moved meanwhile)."""

    evaluation_id: str
    agent: str
    baseline_model: str
    candidate_model: str
    decision: str
    report: dict[str, JsonValue]
    run_id: str | None = None
    baseline_champion: str | None = None
    refusal: str | None = None
    refused_at: datetime | None = None
    created_at: datetime | None = None


class ModelRecord(_Frozen):
    model_id: str
    agent: str
    run_id: str | None = None
    path: str | None = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    created_at: datetime | None = None


class PromotionRecord(_Frozen):
    """One move of an alias. ``kind`` says whether it was a promotion or a rollback,
    ``target`` where it was deployed; ``announced_at`` is set once the deploy and the
    ``DeploymentEvent`` went out (None: committed, announcement pending)."""

    promotion_id: str
    agent: str
    model_id: str
    alias: Alias
    previous_model_id: str | None = None
    run_id: str | None = None
    evaluation_id: str | None = None
    kind: PromotionKind = "promote"
    target: str = "none"
    reason: str | None = None
    announced_at: datetime | None = None
    created_at: datetime | None = None


class TurnBuffer(_Frozen):
    """An open (or just closed) turn-delta buffer: the turns seen so far, in arrival order."""

    conversation_id: str
    turns: tuple[JsonValue, ...]
    meta: dict[str, JsonValue]
    first_seen: datetime
    last_seen: datetime
    closed: bool


ErasureSelectorKind = Literal["conversation", "user_key", "user_value", "agent"]
ErasureStatus = Literal["running", "done", "partial"]


class ErasureTargets(_Frozen):
    """What one erasure batch found: stored conversations and turn buffers (by id)."""

    conversation_ids: tuple[str, ...]
    buffer_ids: tuple[str, ...]


class ErasedRollout(_Frozen):
    rollout_id: str
    conversation_id: str
    agent: str
    reward_spec: str
    task_key: str
    score: float
    passed: bool
    released_in: str | None = None


class ErasureRows(_Frozen):
    """What one erasure transaction deleted. ``erased`` and ``conversation_ids`` carry ids
    for the steps after the commit (Redis, files); they are never stored."""

    transcripts: int
    rollouts: int
    released_rollouts: int
    turn_buffers: int
    lineage_edges: int
    groups_removed: tuple[tuple[str, str, str], ...]
    heldout_keys_removed: int
    datasets: tuple[str, ...]
    erased: tuple[ErasedRollout, ...]
    conversation_ids: tuple[str, ...]


class ErasureImpact(_Frozen):
    """A dataset, run or model built from erased data, and what the erasure did to it."""

    erasure_id: str
    kind: Literal["dataset", "run", "model"]
    id: str
    detail: dict[str, JsonValue] = Field(default_factory=dict)


class ErasureRecord(_Frozen):
    """The audit record of one erasure: the selector's kind (never its value), counts,
    what it affected, the policy applied and the work left (``pending``)."""

    erasure_id: str
    selector: ErasureSelectorKind
    field: str | None = None
    status: ErasureStatus = "running"
    counts: dict[str, int] = Field(default_factory=dict)
    affected: dict[str, JsonValue] = Field(default_factory=dict)
    policy: dict[str, JsonValue] = Field(default_factory=dict)
    pending: tuple[dict[str, JsonValue], ...] = ()
    created_at: datetime | None = None
    finished_at: datetime | None = None
