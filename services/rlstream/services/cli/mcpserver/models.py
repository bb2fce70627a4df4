"""Typed results of the MCP tools: each becomes the tool's ``outputSchema``.

Paths in results are relative to the workspace root, the form the tools accept back.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class IngestResult(_Out):
    transcripts: str = Field(description="transcripts JSONL written (input of grade)")
    rejects: str
    read: int
    ok: int
    rejected: int
    duplicates: int
    by_format: dict[str, int]
    rejects_by_reason: dict[str, int]


class GradeResult(_Out):
    graded: str = Field(description="graded rollouts JSONL (input of profile and curate)")
    failures: str
    counts: dict[str, int] = Field(description="graded / ungradable reasons")


class ProfileResult(_Out):
    """The numbers that decide whether RL has signal here."""

    rollouts: int
    groups: int
    mixed_groups: int
    gradient_support: float | None = Field(
        description="mean p(1-p)/0.25 over groups (n>=2): >0.3 trains, <0.05 flat"
    )
    gradient_support_unbiased: float | None
    pass_at_1: float | None
    pass_at_k: dict[str, float]
    headline_k: int | None
    headroom: float | None = Field(description="pass@k - pass@1 at the headline k")
    mean_reward: float | None
    verdict: str = Field(description="trains | weak | flat | ... (docs/profile.md)")
    method: str = Field(description="the recommended training method")
    method_reason: str
    hack_flags: list[str] = Field(
        description="surface features whose reward correlation is above the shuffle floor"
    )


class CurateResult(_Out):
    dataset: str = Field(description="dataset folder (input of estimate_cost, train)")
    dataset_id: str
    method: str
    files: dict[str, int] = Field(description="rows per file")
    heldout: str | None = Field(description="held-out prompts for evaluate")


class CostResult(_Out):
    method: str
    backend: str
    rows: int
    steps: int
    tokens: int
    params: float
    gpu_hours: float
    wall_hours: float
    gpus: int
    budget_ok: bool
    budget_reason: str | None
    budget_gpu_hours_per_run: float
    budget_gpu_hours_per_day: float
    spent_today_gpu_hours: float


class TrainResult(_Out):
    launcher: Literal["local", "kubernetes"]
    applied: bool = Field(description="false: only the plan below; nothing was launched")
    run_id: str
    status: str
    method: str
    backend: str
    output_dir: str | None = None
    adapter_dir: str | None = None
    steps: int = 0
    first_loss: float | None = None
    last_loss: float | None = None
    gpu_hours: float | None = None
    reason: str | None = None
    will_change: str | None = Field(None, description="what confirm: true would do")


class EvaluateResult(_Out):
    decision: Literal["promote", "reject", "insufficient"]
    reasons: list[str]
    metric: str
    baseline_pass_at_1: float
    candidate_pass_at_1: float
    gain: float
    prompts: int
    report: str = Field(description="report folder (report.md, report.json)")


class LineageNode(_Out):
    kind: str
    id: str
    children: int
    details: dict[str, str]


class LineageResult(_Out):
    model_id: str
    counts: dict[str, int]
    nodes: list[LineageNode] = Field(description="the tree, depth first, up to max_nodes")
    truncated: bool


class PromotionResult(_Out):
    action: Literal["promote", "rollback"]
    agent: str
    model_id: str
    previous_model_id: str | None
    target: str
    promotion_id: str
    reason: str | None
    published: bool
