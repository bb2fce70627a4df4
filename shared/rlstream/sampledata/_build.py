"""Shared plumbing for the domain generators: ids, clocks, messages, PII planting."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from rlstream.sampledata import pii
from rlstream.sampledata.truth import PiiTruth
from rlstream.transcript import Message, ToolCall

EPOCH = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)


def stable_id(prefix: str, *parts: object, n: int = 16) -> str:
    """A deterministic id (never Python's salted hash())."""
    digest = hashlib.sha256("\x00".join(str(p) for p in parts).encode()).hexdigest()
    return f"{prefix}{digest[:n]}"


def sub_rng(seed: int, *parts: object) -> random.Random:
    return random.Random(int(stable_id("", seed, *parts, n=16), 16))


def jdump(obj: Any) -> str:
    return orjson.dumps(obj).decode()


@dataclass
class Convo:
    """Builds one conversation's messages with increasing timestamps and PII bookkeeping."""

    conversation_id: str
    rng: random.Random
    start: datetime
    messages: list[Message] = field(default_factory=list)
    planted: list[PiiTruth] = field(default_factory=list)
    _clock: datetime | None = None
    _calls: int = 0

    def _tick(self, lo: int, hi: int) -> datetime:
        self._clock = (self._clock or self.start) + timedelta(seconds=self.rng.randint(lo, hi))
        return self._clock

    def system(self, text: str) -> None:
        self.messages.append(Message(role="system", content=text, timestamp=self.start))

    def user(self, text: str, pii_rate: float = 0.0) -> None:
        if pii_rate and self.rng.random() < pii_rate:
            kind, value, sentence = pii.plant(self.rng)
            text = f"{text} {sentence}"
            self.planted.append(
                PiiTruth(
                    conversation_id=self.conversation_id,
                    message_index=len(self.messages),
                    kind=kind,
                    value=value,
                )
            )
        self.messages.append(Message(role="user", content=text, timestamp=self._tick(5, 60)))

    def assistant(self, text: str | None, calls: list[tuple[str, Any]] | None = None) -> list[str]:
        tcs = []
        for name, args in calls or []:
            self._calls += 1
            cid = stable_id("call_", self.conversation_id, self._calls, n=20)
            tcs.append(ToolCall(id=cid, name=name, arguments=args, raw_arguments=jdump(args)))
        self.messages.append(
            Message(
                role="assistant",
                content=text,
                tool_calls=tuple(tcs),
                timestamp=self._tick(1, 8),
            )
        )
        return [c.id or "" for c in tcs]

    def tool(self, name: str, call_id: str | None, result: dict[str, Any]) -> None:
        for key in ("customer_email", "customer_phone"):
            value = result.get(key)
            if isinstance(value, str):
                self.planted.append(
                    PiiTruth(
                        conversation_id=self.conversation_id,
                        message_index=len(self.messages),
                        kind="email" if key == "customer_email" else "phone",
                        value=value,
                        where="tool_result",
                    )
                )
        self.messages.append(
            Message(
                role="tool",
                content=jdump(result),
                tool_call_id=call_id,
                name=name,
                timestamp=self._tick(0, 2),
            )
        )


def fenced(name: str, args: dict[str, Any]) -> str:
    """A tool call written as fenced JSON in assistant text (agents without native tools)."""
    return "```json\n" + jdump({"name": name, "arguments": args}) + "\n```"


def pick_pass_rate(rng: random.Random) -> float:
    """The spread real logs show: some tasks always fail, some always pass, most mixed."""
    u = rng.random()
    if u < 0.2:
        return 0.0
    if u < 0.4:
        return 1.0
    return round(rng.uniform(0.1, 0.9), 2)


def rephrase(rng: random.Random, parts: list[tuple[str, ...]], used: set[str]) -> str:
    """Compose an opener from interchangeable parts, avoiding one already used for the task:
    real users never phrase the same request twice the same way."""
    text = ""
    for _ in range(20):
        text = " ".join(p for p in (rng.choice(options) for options in parts) if p).strip()
        if text not in used:
            break
    used.add(text)
    return text
