"""Sample logs of a production order-support agent whose answer is exactly one JSON tool call.

The demo's data: customers ask, in one of several
phrasings per intent, to check, cancel, re-route or escalate an order ("A-48213"); the
agent must answer with one fenced JSON call of ``get_order_status``, ``cancel_order``,
``update_address`` or ``escalate``. The logged agent (a larger production model) gets part
of the tasks right and fails the rest in realistic ways (wrong tool, mistyped order id,
prose instead of a call, two calls). Each record carries its task id and, as ``label``, the
expected call (what the ticket system recorded afterwards), so the ``tool_calling`` reward
grades it from context. Same seed -> byte-identical file.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson

from rlstream.sampledata._build import EPOCH, stable_id, sub_rng

AGENT = "orders-bot"
REWARD = "tool_calling"

SYSTEM = (
    "You are ShopCo's order support agent. Reply to the customer with exactly one tool "
    "call and nothing else, as a JSON block:\n"
    '```json\n{"name": "<tool>", "arguments": {...}}\n```\n'
    "Tools: get_order_status(order_id), cancel_order(order_id), "
    "update_address(order_id, city), escalate(order_id)."
)


def _tool(name: str, desc: str, *args: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": desc,
            "parameters": {
                "type": "object",
                "properties": {a: {"type": "string"} for a in args},
                "required": list(args),
            },
        },
    }


TOOLS = [
    _tool("get_order_status", "Where an order is and when it arrives.", "order_id"),
    _tool("cancel_order", "Cancel an order that has not shipped.", "order_id"),
    _tool("update_address", "Send an order to another city.", "order_id", "city"),
    _tool("escalate", "Hand the conversation to a human agent.", "order_id"),
]

#: intent -> phrasings ({order} and {city} are filled in)
TEMPLATES: dict[str, tuple[str, ...]] = {
    "get_order_status": (
        "Where is my order {order}?",
        "Hi, can you tell me the status of order {order}?",
        "Order {order} still hasn't arrived. When will it come?",
        "Has {order} shipped yet?",
        "I'd like an update on my package, order number {order}.",
        "Any news about order {order}? It's been a week.",
    ),
    "cancel_order": (
        "Please cancel my order {order}.",
        "I changed my mind, cancel {order} please.",
        "Can you stop order {order}? I don't want it anymore.",
        "I ordered {order} by mistake, please cancel it.",
        "Cancel order {order} before it ships, thanks.",
        "I no longer need the items in {order}. Cancel it.",
    ),
    "update_address": (
        "I moved to {city}. Please send order {order} there.",
        "Can you change the delivery city of {order} to {city}?",
        "Ship order {order} to {city} instead, please.",
        "Order {order} should go to {city}, not my old place.",
        "Please update the shipping address for {order}: I'm in {city} now.",
        "Deliver {order} to {city} please, I relocated.",
    ),
    "escalate": (
        "Order {order} arrived broken and I want to talk to a human.",
        "This is the third time {order} is wrong. Get me a manager.",
        "I need a real person to look at order {order}, now.",
        "Your bot can't help me with {order}. Escalate this please.",
        "I was charged twice for {order}. I want to speak to someone.",
        "The package for {order} was stolen from my door. Please get a person.",
    ),
}
CITIES = (
    "Lyon", "Denver", "Osaka", "Leeds", "Porto", "Austin", "Ghent", "Turin", "Quebec", "Bergen",
    "Seville", "Tulsa", "Krakow", "Adelaide", "Malmo", "Dresden", "Nantes", "Boise",
)  # fmt: skip
_CONFUSED = {
    "get_order_status": "escalate",
    "cancel_order": "get_order_status",
    "update_address": "cancel_order",
    "escalate": "cancel_order",
}
_PROSE = (
    "I have checked order {order} for you and everything looks fine.",
    "Sure! I will take care of {order} right away.",
    "Thanks for reaching out about {order}. A colleague will follow up by email.",
)
#: share of tasks the production agent solves reliably / sometimes / rarely
_DIFFICULTY = ((0.45, 0.9), (0.35, 0.55), (0.20, 0.2))


def _call_text(name: str, args: dict[str, str]) -> str:
    body = orjson.dumps({"name": name, "arguments": args}).decode()
    return f"```json\n{body}\n```"


def _expected(intent: str, order: str, city: str) -> dict[str, str]:
    return {"order_id": order, "city": city} if intent == "update_address" else {"order_id": order}


def _mistype(order: str, rng: random.Random) -> str:
    digits = list(order[2:])
    i = rng.randrange(len(digits) - 1)
    digits[i], digits[i + 1] = digits[i + 1], digits[i]
    if digits == list(order[2:]):
        digits[i] = str((int(digits[i]) + 1) % 10)
    return "A-" + "".join(digits)


def _failure(intent: str, order: str, city: str, rng: random.Random) -> str:
    """A realistic wrong answer: wrong tool, mistyped id, prose, or two calls."""
    kind = rng.choice(("wrong_tool", "wrong_id", "prose", "two_calls"))
    if kind == "wrong_tool":
        other = _CONFUSED[intent]
        return _call_text(other, _expected(other, order, city))
    if kind == "wrong_id":
        return _call_text(intent, _expected(intent, _mistype(order, rng), city))
    if kind == "prose":
        return rng.choice(_PROSE).format(order=order)
    first = _call_text("get_order_status", {"order_id": order})
    return first + "\n" + _call_text(intent, _expected(intent, order, city))


def _pass_rate(rng: random.Random) -> float:
    x = rng.random()
    for share, rate in _DIFFICULTY:
        if x < share:
            return rate
        x -= share
    return _DIFFICULTY[-1][1]


def order_records(seed: int = 7, n_tasks: int = 1500, rollouts: int = 3) -> list[dict[str, Any]]:
    """OpenAI-format log records: ``n_tasks`` requests, ``rollouts`` answers each."""
    rng = sub_rng(seed, "orders")
    intents = sorted(TEMPLATES)
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for ti in range(n_tasks):
        while True:
            intent = intents[ti % len(intents)]
            template = rng.randrange(len(TEMPLATES[intent]))
            order = f"A-{rng.randint(10000, 99999)}"
            city = rng.choice(CITIES) if intent == "update_address" else ""
            if (intent, order, city) not in seen:
                seen.add((intent, order, city))
                break
        user = TEMPLATES[intent][template].format(order=order, city=city)
        task_id = stable_id("order-task-", seed, ti, n=12)
        expected = [{"name": intent, "arguments": _expected(intent, order, city)}]
        p = _pass_rate(rng)
        for ri in range(rollouts):
            ok = rng.random() < p
            answer = (
                _call_text(intent, _expected(intent, order, city))
                if ok
                else _failure(intent, order, city, rng)
            )
            when = EPOCH.timestamp() + ti * 600 + ri * 60
            out.append(
                {
                    "id": stable_id("orders-conv-", seed, ti, ri),
                    "agent": AGENT,
                    "model": "shopco-agent-large",
                    "created_at": when,
                    "metadata": {"task_id": task_id, "intent": intent, "template": template},
                    "label": {"expected_calls": expected},
                    "tools": TOOLS,
                    "messages": [
                        {"role": "system", "content": SYSTEM},
                        {"role": "user", "content": user},
                        {"role": "assistant", "content": answer},
                    ],
                }
            )
    return out


def write_order_logs(path: Path, seed: int = 7, n_tasks: int = 1500, rollouts: int = 3) -> int:
    """Write the records as JSONL; returns how many conversations were written."""
    records = order_records(seed, n_tasks, rollouts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return len(records)
