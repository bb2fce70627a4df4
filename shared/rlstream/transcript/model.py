"""Canonical Transcript: one conversation, with nothing the source had dropped.

Parsers map every supported log shape onto these models. Fields a format carries that have
no canonical slot go to ``extra`` (per message / tool call) or ``metadata`` (per
conversation), so a transcript can always be traced back to, and compared with, its source.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

SCHEMA_VERSION: Literal[1] = 1

Role = Literal["system", "user", "assistant", "tool"]
TaskKeyRule = Literal["explicit", "opener", "merged"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolCall(_Frozen):
    """A tool/function call made by the assistant.

    ``arguments`` holds the parsed JSON arguments; ``raw_arguments`` keeps the original
    string when the source encoded them as a string (OpenAI does), so nothing is lost even
    when the string is not valid JSON.
    """

    id: str | None = None
    name: str
    arguments: JsonValue = None
    raw_arguments: str | None = None
    type: str = "function"
    extra: dict[str, JsonValue] = Field(default_factory=dict)


class Message(_Frozen):
    """One message. Tool results are ``role="tool"`` with ``tool_call_id`` and ``name``."""

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    timestamp: datetime | None = None
    extra: dict[str, JsonValue] = Field(default_factory=dict)

    @property
    def text(self) -> str:
        """Content as a string ('' when the message carries only tool calls)."""
        return self.content or ""


class SourceRef(_Frozen):
    """Where a transcript came from: a file and line, or a topic, partition and offset."""

    kind: Literal["file", "kafka", "inline"] = "inline"
    file: str | None = None
    line: int | None = None
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None

    def label(self) -> str:
        if self.kind == "file":
            return f"{self.file}:{self.line}"
        if self.kind == "kafka":
            return f"{self.topic}[{self.partition}]@{self.offset}"
        return "inline"


#: logged fields that name a task (same order as rlstream.taskkey's defaults, plus "task")
TASK_FIELDS: tuple[str, ...] = ("task_id", "intent", "scenario_id", "prompt_id", "task")


class Transcript(_Frozen):
    """One conversation, redacted and keyed, ready for grading."""

    schema_version: Literal[1] = SCHEMA_VERSION
    conversation_id: str
    messages: tuple[Message, ...]
    task_key: str | None = None
    task_key_rule: TaskKeyRule | None = None
    tools: tuple[dict[str, JsonValue], ...] = ()
    model: str | None = None
    agent: str | None = None
    agent_version: str | None = None
    policy_version: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    outcome: dict[str, JsonValue] = Field(default_factory=dict)
    label: JsonValue = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    source: SourceRef = Field(default_factory=SourceRef)
    format: str = "canonical"
    redacted: bool = False

    @property
    def group_key(self) -> str:
        """The one definition of a rollout's peer group, for grading, profiling and curation:
        the task key resolved at ingest, else a logged task field in ``metadata``
        (``"task_id:<v>"``, the form ingest gives it), else the conversation itself."""
        if self.task_key:
            return self.task_key
        for name in TASK_FIELDS:
            v = self.metadata.get(name)
            if isinstance(v, str | int) and not isinstance(v, bool) and str(v):
                return f"{name}:{v}"
        return self.conversation_id

    @property
    def policy(self) -> str | None:
        """Which policy produced the rollout: agent version, policy version or model."""
        for v in (self.agent_version, self.policy_version, self.model):
            if v:
                return str(v)
        return None

    @property
    def system_prompt(self) -> str | None:
        parts = [m.text for m in self.messages if m.role == "system" and m.content]
        return "\n".join(parts) if parts else None

    @property
    def first_user_message(self) -> str | None:
        return next((m.text for m in self.messages if m.role == "user"), None)

    def assistant_turns(self) -> list[Message]:
        return [m for m in self.messages if m.role == "assistant"]

    def tool_calls(self) -> list[ToolCall]:
        return [c for m in self.messages for c in m.tool_calls]

    def final_assistant_text(self) -> str | None:
        for m in reversed(self.messages):
            if m.role == "assistant" and m.content:
                return m.content
        return None

    def dump_json(self) -> bytes:
        return self.model_dump_json(exclude_defaults=False).encode()

    @classmethod
    def load_json(cls, data: bytes | str) -> Transcript:
        return cls.model_validate_json(data)

    def with_updates(self, **changes: Any) -> Transcript:
        """A validated copy with fields replaced (frozen models cannot be mutated).

        Only the changed fields are validated (next to the two required ones, which are
        already-valid values here): the unchanged ones were validated when ``self`` was made,
        and re-walking every tool schema and metadata tree is what a call cost (figure in
        bench/README.md). The result
        equals what validating a full dump gives, every field marked as set.
        """
        checked = self.model_validate(
            {"conversation_id": self.conversation_id, "messages": self.messages, **changes}
        )
        new = self.model_copy(update={k: checked.__dict__[k] for k in changes})
        object.__setattr__(new, "__pydantic_fields_set__", set(type(self).model_fields))
        return new
