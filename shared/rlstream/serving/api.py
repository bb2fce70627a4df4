"""OpenAI chat-completions shapes: the request a client sends, the response and SSE chunks.

Requests are lenient (``extra="ignore"``): OpenAI clients send fields rlstream does not use
(``logprobs``, ``presence_penalty``...), and refusing them would break ordinary clients.
Responses are exactly the OpenAI shape, so the ``openai`` SDK parses them unchanged.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FunctionCall(_Out):
    name: str
    #: a JSON string, as OpenAI sends it
    arguments: str


class ToolCallOut(_Out):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class InFunction(_In):
    name: str = ""
    arguments: Any = None


class InToolCall(_In):
    id: str | None = None
    type: str = "function"
    function: InFunction


class InMessage(_In):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    #: a string or a list of content parts (``{"type": "text", "text": ...}``)
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[InToolCall] | None = None
    tool_call_id: str | None = None

    @property
    def text(self) -> str:
        """Content as text: the text parts joined (images and audio are not served)."""
        if isinstance(self.content, str):
            return self.content
        if not self.content:
            return ""
        return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")


class ChatRequest(_In):
    model: str | None = None
    messages: list[InMessage] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    seed: int | None = None
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    n: int = Field(default=1, ge=1, le=1)
    user: str | None = None
    metadata: dict[str, Any] | None = None

    def token_limit(self, default: int, ceiling: int) -> int:
        """max_completion_tokens, else max_tokens, else the server default; capped."""
        asked = self.max_completion_tokens or self.max_tokens or default
        return min(asked, ceiling)

    def include_usage(self) -> bool:
        return bool((self.stream_options or {}).get("include_usage"))


class ReplyMessage(_Out):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[ToolCallOut] | None = None


FinishReason = Literal["stop", "length", "tool_calls"]


class Choice(_Out):
    index: int = 0
    message: ReplyMessage
    finish_reason: FinishReason
    logprobs: None = None


class Usage(_Out):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatResponse(_Out):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage


class ToolCallDelta(_Out):
    index: int
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class Delta(_Out):
    role: Literal["assistant"] | None = None
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChunkChoice(_Out):
    index: int = 0
    delta: Delta
    finish_reason: FinishReason | None = None
    logprobs: None = None


class ChatChunk(_Out):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = None


def sse(chunk: ChatChunk) -> bytes:
    """One server-sent event; ``usage`` is left out when None, as OpenAI does mid-stream."""
    body = chunk.model_dump(mode="json", exclude_none=False)
    if body["usage"] is None:
        del body["usage"]
    return b"data: " + orjson.dumps(body) + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """The OpenAI error envelope."""
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
