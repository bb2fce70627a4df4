"""Event payloads on Kafka: frozen, versioned, JSON on the wire.

Transcripts and scored rollouts travel as the library's own models (``Transcript`` and
``ScoredRollout`` already carry ``schema_version`` and forbid extra fields), so there is one
definition of each, not a copy that can drift. The models here cover what only exists on
the wire: turn deltas, dataset releases, training run states and dead-letter records.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from rlstream.rollout import ScoredRollout
from rlstream.transcript.model import Transcript

EVENT_SCHEMA_VERSION = 1

#: ``rlstream.transcripts.v1`` carries a canonical Transcript as is.
TranscriptEvent = Transcript
#: ``rlstream.scored.v1`` carries a graded rollout as is (key: its task key).
ScoredEvent = ScoredRollout


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1

    def dump_json(self) -> bytes:
        return self.model_dump_json().encode()


def _now() -> datetime:
    return datetime.now(UTC)


class RawTurnDelta(_Event):
    """One or more new messages of a conversation still in progress.

    Agents that stream turns publish these on ``rlstream.conversations.raw`` keyed by the
    conversation id; the ingest service assembles them and closes the conversation on
    ``end=True`` or after an idle timeout. ``turn`` is the sender's 0-based sequence number,
    so a redelivered or reordered delta lands in its place exactly once. ``metadata`` holds
    conversation-level fields (agent, task id, outcome, model …); later deltas override
    earlier keys.
    """

    kind: Literal["turn_delta"] = "turn_delta"
    conversation_id: str = Field(min_length=1)
    turn: int = Field(ge=0)
    messages: tuple[dict[str, JsonValue], ...] = ()
    end: bool = False
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    sent_at: datetime | None = None


class DatasetProfile(BaseModel):
    """The numbers a release was decided on (a summary of the pending pool's profile)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rollouts: int
    groups: int
    groups_multi: int = Field(description="groups with n >= 2")
    pass_rate: float
    gradient_support: float
    gradient_support_unbiased: float | None = None
    method: str | None = Field(default=None, description="recommended training method")


class LineageSummary(BaseModel):
    """Enough lineage to audit a release without a database query; the edges are in PG."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rollout_ids_sha256: str
    conversations: int
    task_keys: int
    sources: tuple[str, ...] = Field(default=(), description="topics/files the rows came from")


class DatasetReleased(_Event):
    """A sealed, immutable dataset handed to training (topic ``rlstream.datasets.v1``).

    Delivery is at-least-once: after a crash or a Redis loss the same release can be
    announced again (with a later ``released_at``). ``event_id`` is stable for a release
    (derived from the content-addressed ``dataset_id``) and is also the Kafka header
    ``x-rlstream-event-id``: consumers deduplicate on it.
    """

    event_id: str = Field(default="", description="stable per release: deduplicate on it")
    dataset_id: str
    agent: str
    reward_spec: str
    path: str
    sha256: str
    files: dict[str, str] = Field(default_factory=dict, description="file name -> sha256")
    manifest: dict[str, JsonValue] = Field(default_factory=dict)
    profile: DatasetProfile
    lineage: LineageSummary
    released_at: datetime = Field(default_factory=_now)

    @model_validator(mode="before")
    @classmethod
    def _stable_event_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("event_id") and data.get("dataset_id"):
            data = {**data, "event_id": f"dataset-released:{data['dataset_id']}"}
        return data


class DLQRecord(_Event):
    """What a service could not accept, with what is needed to find and replay it.

    ``value_b64`` is the original value byte for byte (base64), headers likewise, unless
    ``value_redacted`` (PII was found and replaced: the stored value is the redacted one) or
    ``value_truncated`` (the value was cut to the DLQ's payload cap so that the dead letter
    itself is always publishable). ``value_sha256`` and ``value_bytes`` always describe the
    original value. A key holding PII is replaced by its stable hash. The error fields say
    why it was rejected, the source fields where it came from.
    """

    topic: str
    partition: int
    offset: int
    timestamp_ms: int | None = None
    key_b64: str | None = None
    value_b64: str
    headers: tuple[tuple[str, str], ...] = Field(default=(), description="(name, base64)")
    error_code: str
    error_class: str
    error_message: str
    service: str
    failed_at: datetime = Field(default_factory=_now)
    value_sha256: str | None = None
    value_bytes: int | None = None
    value_redacted: bool = False
    value_truncated: bool = False

    def original_value(self) -> bytes:
        return base64.b64decode(self.value_b64)

    def original_key(self) -> bytes | None:
        return None if self.key_b64 is None else base64.b64decode(self.key_b64)


class EvaluationEvent(_Event):
    """A gate decision on a trained candidate (topic ``rlstream.evaluations.v1``, key: run id).

    ``event_id`` is the evaluation id, derived from the run id, so a redelivered training
    event that is evaluated again publishes the same id and consumers deduplicate on it.
    """

    event_id: str
    evaluation_id: str
    run_id: str | None
    agent: str
    model_id: str = Field(description="the candidate's registry id (weights digest)")
    baseline_model: str = Field(description="champion model id, or the base model's name")
    candidate_model: str
    #: insufficient: too few held-out prompts to decide; only promote moves an alias
    decision: Literal["promote", "reject", "insufficient"]
    reasons: tuple[str, ...] = ()
    metric: str | None = None
    baseline_value: float | None = None
    candidate_value: float | None = None
    delta_mean: float | None = None
    delta_ci_low: float | None = None
    delta_ci_high: float | None = None
    report_path: str | None = None
    at: datetime = Field(default_factory=_now)


class DeploymentEvent(_Event):
    """An alias moved (topic ``rlstream.deployments.v1``, key: agent).

    ``event_id`` is the promotion id: a promotion re-announced after a crash carries the
    same id. ``kind`` is ``promote`` or ``rollback``; ``target`` says where it was deployed
    (``none``, or ``kubernetes`` with ``target_ref`` = namespace/deployment).
    """

    event_id: str
    promotion_id: str
    agent: str
    alias: Literal["champion", "challenger"]
    model_id: str
    previous_model_id: str | None = None
    kind: Literal["promote", "rollback"] = "promote"
    run_id: str | None = None
    evaluation_id: str | None = None
    model_path: str | None = None
    target: str = "none"
    target_ref: str | None = None
    at: datetime = Field(default_factory=_now)


TrainingState = Literal["launched", "started", "succeeded", "failed", "over_budget"]


class TrainingRunEvent(_Event):
    """A training run's state change (topic ``rlstream.training.v1``, key: run id).

    ``event_id`` is ``f"{run_id}:{state}"``: the launcher's watcher and the trainer itself
    may both report the same change (and a restarted watcher reports it again), so
    consumers deduplicate on it.
    """

    event_id: str = Field(default="", description="run_id:state (filled in when empty)")
    run_id: str
    dataset_id: str
    agent: str
    reward_spec: str
    state: TrainingState
    reason: str | None = None
    backend: str
    method: str
    base_model: str | None = None
    artifact_dir: str | None = Field(default=None, description="the run's output dir")
    launcher: str
    at: datetime = Field(default_factory=_now)

    @model_validator(mode="before")
    @classmethod
    def _stable_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("event_id"):
            data = {**data, "event_id": f"{data.get('run_id')}:{data.get('state')}"}
        return data


__all__ = [
    "EVENT_SCHEMA_VERSION",
    "DLQRecord",
    "DatasetProfile",
    "DatasetReleased",
    "DeploymentEvent",
    "EvaluationEvent",
    "LineageSummary",
    "RawTurnDelta",
    "ScoredEvent",
    "TrainingRunEvent",
    "TrainingState",
    "TranscriptEvent",
]
