"""Adapters that hand the peers the same data rlstream grades and profiles.

* stateset-agents 0.69.0 (BUSL-1.1): its rule-based reward classes are *called*, never
  copied. Its ``improve`` command cannot run from the wheel (it imports a ``scripts/``
  module the wheel does not ship), so the classes are called directly.
* whileai 0.131 (Apache-2.0): the offline scorers under ``whileai.simulations.score``.

Conversions run outside the timed region: each side is timed on its own native input.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from rlstream.sampledata.truth import TaskTruth
from rlstream.transcript import Transcript

#: rlstream reward name -> the stateset-agents class that grades the same task
STATESET_REWARDS = {
    "customer_support": ("stateset_agents.data.customer_support_bench", "SupportRewardComposite"),
    "tool_calling": ("stateset_agents.data.tool_calling_bench", "ToolCallReward"),
    "gsm8k": ("stateset_agents.data.gsm8k", "GSM8KReward"),
}


def stateset_available() -> bool:
    try:
        import stateset_agents.data.gsm8k  # noqa: F401
    except Exception:
        return False
    return True


def whileai_available() -> bool:
    try:
        import whileai.simulations.score.hack_scan  # noqa: F401
    except Exception:
        return False
    return True


def stateset_reward(name: str) -> Any:
    import importlib

    module, cls = STATESET_REWARDS[name]
    return getattr(importlib.import_module(module), cls)()


def _tool_block(name: str, arguments: Any) -> str:
    """stateset's ToolCallReward reads only a fenced ``{"tool", "parameters"}`` JSON block,
    so native tool calls are rendered that way for it (a favour to the peer: fed the raw
    OpenAI shape it would score every call as missing)."""
    return "```json\n" + json.dumps({"tool": name, "parameters": arguments or {}}) + "\n```"


def stateset_turns(t: Transcript) -> list[Any]:
    from stateset_agents.core.trajectory import ConversationTurn

    turns = []
    for m in t.messages:
        content = m.text
        if m.role == "assistant" and m.tool_calls:
            blocks = [_tool_block(c.name, c.arguments) for c in m.tool_calls]
            content = "\n".join([content, *blocks]) if content else "\n".join(blocks)
        turns.append(ConversationTurn(role=m.role, content=content))
    return turns


def stateset_context(name: str, task: TaskTruth) -> dict[str, Any]:
    """The context dict each stateset reward reads, built from the task's truth.

    Without it stateset silently scores constants (gsm8k 0, tool_calling 0.6): see bench/README.md.
    Giving it the context makes it do its real work.
    """
    if name == "gsm8k":
        return {"gold_answer": gold_number(task.label)}
    if name == "tool_calling":
        ref = task.reference if isinstance(task.reference, dict) else {}
        listed = ref.get("expected_calls")
        calls = [c for c in listed if isinstance(c, dict)] if isinstance(listed, list) else []
        # stateset parses only the *first* fenced call block, so its expectation is the
        # first reference call
        first = calls[0] if calls else {}
        return {
            "expected_tool": first.get("name", ""),
            "expected_params": first.get("arguments") or {},
            "expected_outcome": "",
        }
    if name == "customer_support":
        return {"intent": task.kind, "must_acknowledge": [task.kind], "must_avoid": []}
    raise KeyError(name)


def gold_number(label: Any) -> float | None:
    """A float from any of the generator's label forms (``#### 7``, ``A: 7``,
    ``\\boxed{7}``, ``{"answer": "7"}``, ``3/4``, 7)."""
    if isinstance(label, dict):
        label = label.get("answer")
    if isinstance(label, int | float) and not isinstance(label, bool):
        return float(label)
    text = str(label).strip()
    for prefix in ("####", "A:"):
        text = text.removeprefix(prefix).strip()
    text = text.removeprefix("\\boxed{").removesuffix("}").replace(",", "").strip()
    try:
        return float(Fraction(text))
    except (ValueError, ZeroDivisionError):
        return None


def grade_stateset(reward: Any, items: Sequence[tuple[list[Any], dict[str, Any]]]) -> list[float]:
    """Grade every conversation with one stateset reward inside one event loop.

    The rewards are ``async`` but never suspend; one ``asyncio.run`` around the whole batch
    is the cheapest honest way to call them (a loop per call would charge the peer for
    loop start-up).
    """

    async def run() -> list[float]:
        out = []
        for turns, ctx in items:
            result = await reward.compute_reward(turns, ctx)
            out.append(float(result.score))
        return out

    return asyncio.run(run())


def whileai_row(t: Transcript, task_key: str, passed: bool) -> dict[str, Any]:
    """A whileai row v1: messages in OpenAI shape, tool steps, a binary ``reward``."""
    messages: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    for m in t.messages:
        msg: dict[str, Any] = {"role": m.role, "content": m.text}
        if m.tool_calls:
            msg["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                }
                for c in m.tool_calls
            ]
            steps.extend({"tool": c.name, "arguments": c.arguments} for c in m.tool_calls)
        if m.role == "tool":
            msg["tool_call_id"] = m.tool_call_id
        messages.append(msg)
    return {
        "task_id": task_key,
        # hack_scan groups by ``prompt`` (group_signal by task_id): both get the task key so
        # whileai sees the same groups rlstream does, not one group per rephrased opener
        "prompt": task_key,
        "messages": messages,
        "steps": steps,
        "final_text": t.final_assistant_text() or "",
        "reward": 1 if passed else 0,
    }


def whileai_profile(
    rows: Sequence[dict[str, Any]], *, hack: bool = True, auto: bool = True
) -> dict[str, Any]:
    """whileai's nearest equivalent of a profile: group_signal (+ pass@k inside it) and the
    within-group hack scan with its default 100-shuffle floor. ``auto=False`` drops the
    scan's word/word-pair feature tier, leaving the hand tier that rlstream's scan matches."""
    from whileai.simulations.score.hack_scan import hack_scan
    from whileai.simulations.score.optimize import group_signal

    out: dict[str, Any] = {"group_signal": group_signal(rows)}
    if hack:
        scan = hack_scan(rows, auto=auto)
        out["hack_scan"] = {
            "regime": scan["regime"],
            "support": scan["support"],
            "top": scan["top_feature"],
        }
    return out
