"""Held-out prompts for evaluation, and the leakage check that guards them.

A prompt whose task key the candidate trained on measures memory, not generalisation: the
evaluation refuses to run when any held-out task key appears in the candidate's training
dataset (its manifest lineage) or in what Postgres says was released for training.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, JsonValue

from rlstream.curation import verify_dataset
from rlstream.errors import ConfigError, RlstreamError


class HeldoutLeakError(RlstreamError):
    """Held-out prompts the candidate was trained on: the evaluation is refused."""

    code = "heldout_leak"


class HeldoutPrompt(BaseModel):
    """One ``heldout.jsonl`` row, parsed: the prompt, the grader context, the task key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_key: str
    agent: str = ""
    reward_spec: str | None = None
    #: role + content; a next-action prompt's earlier turns also keep ``tool_calls``,
    #: ``tool_call_id`` and ``name`` (the model must see the calls it made)
    messages: tuple[dict[str, JsonValue], ...]
    tools: tuple[dict[str, JsonValue], ...] = ()
    #: the logged gold label (e.g. the expected calls), else None
    label: JsonValue = None
    #: the passing answers' calls, used as reference only when there is no gold label
    reference: JsonValue = None
    #: the release (dataset id) whose heldout.jsonl the prompt came from, when accumulated
    release: str | None = None
    #: the environment task (a ``python`` domain's instruction and ground-truth actions)
    task: dict[str, JsonValue] | None = None


def _messages(raw: Any, where: str) -> tuple[dict[str, JsonValue], ...]:
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{where}: 'prompt' must be a non-empty list of messages")
    out: list[dict[str, JsonValue]] = []
    for m in raw:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ConfigError(f"{where}: every prompt message needs a role")
        msg: dict[str, JsonValue] = {"role": m["role"], "content": str(m.get("content") or "")}
        if isinstance(m.get("tool_calls"), list) and m["tool_calls"]:
            msg["tool_calls"] = m["tool_calls"]
        for key in ("tool_call_id", "name"):
            if isinstance(m.get(key), str):
                msg[key] = m[key]
        out.append(msg)
    return tuple(out)


def parse_row(row: dict[str, Any], where: str) -> HeldoutPrompt:
    if not isinstance(row.get("task_key"), str):
        raise ConfigError(f"{where}: a held-out row needs a task_key")
    label = row.get("label")
    ctx = orjson.loads(label) if isinstance(label, str) else (label or {})
    if not isinstance(ctx, dict):
        ctx = {"label": ctx}
    expected = ctx.get("expected_tool_calls") or None
    return HeldoutPrompt(
        task_key=row["task_key"],
        agent=str(row.get("agent") or ""),
        reward_spec=row.get("reward_spec") or ctx.get("reward_spec"),
        messages=_messages(row.get("prompt"), where),
        tools=tuple(row.get("tools") or ()),
        label=ctx.get("label"),
        reference=expected,
        release=row["release"] if isinstance(row.get("release"), str) else None,
        task=row["task"] if isinstance(row.get("task"), dict) else None,
    )


def load_heldout(path: Path, max_prompts: int | None = None) -> list[HeldoutPrompt]:
    """The held-out prompts in file order (the first ``max_prompts`` when given)."""
    if not path.is_file():
        raise ConfigError(f"held-out file not found: {path}")
    out: list[HeldoutPrompt] = []
    with path.open("rb") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{n}: not JSON ({exc})") from exc
            out.append(parse_row(row, f"{path}:{n}"))
            if max_prompts is not None and len(out) >= max_prompts:
                break
    if not out:
        raise ConfigError(f"{path} holds no held-out prompts")
    return out


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def training_task_keys(dataset_dir: Path) -> set[str]:
    """Every task key a training dataset's rows came from (manifest lineage, verified)."""
    manifest = verify_dataset(dataset_dir)
    return {e.task_key for e in manifest.lineage}


def refuse_leaks(prompts: Sequence[HeldoutPrompt], trained: Collection[str], where: str) -> int:
    """Raise when any prompt's task key is in ``trained``; returns how many were checked."""
    leaked = sorted({p.task_key for p in prompts} & set(trained))
    if leaked:
        raise HeldoutLeakError(
            f"{len(leaked)} held-out prompt(s) are in the candidate's training lineage "
            f"({where}): {', '.join(leaked[:5])}{' ...' if len(leaked) > 5 else ''}"
        )
    return len(prompts)


async def released_task_keys(store: Any, prompts: Sequence[HeldoutPrompt]) -> set[str]:
    """Task keys of these prompts that Postgres says some dataset released for training
    (per agent, under any reward spec): pass them as ``EvalRequest.trained_task_keys``."""
    out: set[str] = set()
    by_agent: dict[str, list[str]] = {}
    for p in prompts:
        by_agent.setdefault(p.agent, []).append(p.task_key)
    for agent, keys in sorted(by_agent.items()):
        out |= await store.released_task_keys(agent or None, keys)
    return out
