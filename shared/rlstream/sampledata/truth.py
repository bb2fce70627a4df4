"""What the sample-data generator knows to be true, for tests and the demo to check against.

``expected`` holds, per conversation and reward, True/False (pass/fail) or None (the reward
must raise MissingContextError: e.g. no outcome was logged).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TaskTruth(_Frozen):
    task_id: str
    domain: str
    agent: str
    kind: str
    true_pass_rate: float = Field(ge=0.0, le=1.0)
    n_rollouts: int
    n_expected_pass: int
    label: JsonValue = None
    reference: JsonValue = None
    required_decision: str | None = None


class ConversationTruth(_Frozen):
    conversation_id: str
    task_id: str
    domain: str
    mode: str
    expected: dict[str, bool | None]
    expected_pass: bool
    truncated: bool = False
    duplicate_of: str | None = None


class PiiTruth(_Frozen):
    conversation_id: str
    message_index: int
    kind: str
    value: str
    where: Literal["content", "tool_result"] = "content"


class MalformedTruth(_Frozen):
    file: str
    line: int
    kind: str


class Truth(_Frozen):
    seed: int
    domains: tuple[str, ...]
    tasks: dict[str, TaskTruth] = Field(default_factory=dict)
    conversations: dict[str, ConversationTruth] = Field(default_factory=dict)
    pii: tuple[PiiTruth, ...] = ()
    malformed: tuple[MalformedTruth, ...] = ()
    redelivered: tuple[str, ...] = ()
    locations: dict[str, str] = Field(default_factory=dict)

    def merge(self, other: Truth) -> Truth:
        """Combine the truths of two generator runs (different domains)."""
        return Truth(
            seed=self.seed,
            domains=(*self.domains, *other.domains),
            tasks={**self.tasks, **other.tasks},
            conversations={**self.conversations, **other.conversations},
            pii=(*self.pii, *other.pii),
            malformed=(*self.malformed, *other.malformed),
            redelivered=(*self.redelivered, *other.redelivered),
            locations={**self.locations, **other.locations},
        )

    def dump(self, path: Path) -> None:
        path.write_text(self.model_dump_json(indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> Truth:
        return cls.model_validate_json(path.read_text())


class SampleFile(_Frozen):
    path: str
    format: str
    records: int
    sha256: str
    compressed: bool = False
    mapping: str | None = None


class SampleManifest(_Frozen):
    """What :func:`write_sample_logs` wrote (paths relative to its out_dir)."""

    seed: int
    scale: int
    files: tuple[SampleFile, ...]
    truth: str
    conversations: int
    note: str = ""
