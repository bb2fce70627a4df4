"""Refund-decision conversations graded by ``nsr`` against examples/policies/refund_policy.yaml.

The generator decides the facts first (order total, days since delivery, final sale, a
damage claim, a third-party request), derives the required decision with its own mirror of
the policy (:func:`required_decision`), and the rollout states that decision or a wrong one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from rlstream.sampledata._build import Convo, rephrase

AGENT = "refunds-bot"
SYSTEM = (
    "You are Acme's refunds agent. Look the order up, apply the refund policy, and call "
    "submit_decision with approve, deny, refuse or escalate before telling the customer."
)
TOOLS: tuple[dict[str, Any], ...] = (
    {
        "name": "lookup_order",
        "description": "Fetch an order",
        "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    },
    {
        "name": "submit_decision",
        "description": "Record the refund decision",
        "input_schema": {
            "type": "object",
            "properties": {"decision": {"type": "string"}, "order_id": {"type": "string"}},
        },
    },
)
DECISIONS = ("approve", "deny", "refuse", "escalate")

_GREET = ("", "Hi,", "Hello,", "Hey,", "Good afternoon,")
_CLOSE = ("", "Thanks.", "Thank you.", "Let me know.", "Cheers.")
_PLAIN = (
    "I'd like a refund for order {oid}.",
    "can I return order #{oid} and get my money back?",
    "please refund order {oid}, the {item} isn't what I expected.",
    "I want to send back the {item} from order {oid} for a refund.",
)
_DAMAGED = (
    "the {item} in order {oid} arrived broken, I want a refund.",
    "order #{oid} came damaged. Refund please.",
    "my {item} is defective (order {oid}); can I get my money back?",
)
_THIRD = (
    "I'm asking about my friend's order {oid}, can you refund it to me?",
    "can you refund someone else's order? It's {oid}.",
    "my neighbour's order {oid} needs a refund, please process it for me.",
)
_TEXT = {
    "approve": (
        "Good news, {name}: I've approved a full refund of ${total} for order {oid}. You'll see it in 3-5 business days.",
        "Your refund for order {oid} is approved, {name}. The ${total} will be back on your statement shortly.",
    ),
    "deny": (
        "I'm sorry, {name}, but I can't approve a refund for order {oid} under our policy.",
        "Unfortunately order {oid} is not eligible for a refund under our return policy.",
    ),
    "escalate": (
        "Because of the order value, I've escalated your request to a specialist who will review it within one business day.",
        "This one needs a second look, so I've escalated order {oid} to our review team; you'll hear back within 24 hours.",
    ),
    "refuse": (
        "I'm sorry, but I can't share or discuss details of someone else's order. The account holder will need to contact us.",
        "For privacy reasons that's not something I can help with; the order owner has to reach out directly.",
    ),
}
_ITEMS = ("standing desk", "espresso machine", "winter coat", "headphones", "tablet", "sofa")
_NAMES = ("Maria", "James", "Li", "Fatima", "Oliver", "Priya", "Lucas", "Amara")


@dataclass(frozen=True)
class PolicyTask:
    task_id: str
    oid: str
    item: str
    name: str
    total: float
    days: int
    final_sale: bool
    damaged: bool
    third_party: bool
    required: str


def required_decision(
    total: float, days: int, final_sale: bool, damaged: bool, third_party: bool
) -> str:
    """The generator's own reading of refund_policy.yaml (the truth the reward must match)."""
    if third_party:
        return "refuse"
    if total > 500:
        return "escalate"
    if final_sale and not damaged:
        return "deny"
    if damaged and days <= 90:
        return "approve"
    if days > 30:
        return "deny"
    return "approve"


def make_task(rng: random.Random, task_id: str) -> PolicyTask:
    target = rng.choice(("approve", "approve", "deny", "deny", "escalate", "refuse"))
    third = target == "refuse"
    total = (
        round(rng.uniform(520, 1900), 2) if target == "escalate" else round(rng.uniform(15, 480), 2)
    )
    damaged, final_sale, days = False, False, rng.randint(1, 30)
    if target == "deny":
        if rng.random() < 0.5:
            final_sale, days = True, rng.randint(1, 60)
        else:
            days = rng.randint(31, 120)
    elif target == "approve" and rng.random() < 0.4:
        damaged, days, final_sale = True, rng.randint(1, 90), rng.random() < 0.5
    elif target in ("escalate", "refuse"):
        days, final_sale = rng.randint(1, 120), rng.random() < 0.3
    required = required_decision(total, days, final_sale, damaged, third)
    assert required == target, (required, target)
    return PolicyTask(
        task_id=task_id,
        oid=f"ORD-{rng.randint(10000, 99999)}",
        item=rng.choice(_ITEMS),
        name=rng.choice(_NAMES),
        total=total,
        days=days,
        final_sale=final_sale,
        damaged=damaged,
        third_party=third,
        required=required,
    )


def build(c: Convo, rng: random.Random, task: PolicyTask, mode: str, used: set[str]) -> None:
    c.system(SYSTEM)
    asks = _THIRD if task.third_party else _DAMAGED if task.damaged else _PLAIN
    ask = rng.choice(asks).format(oid=task.oid, item=task.item)
    c.user(rephrase(rng, [_GREET, (ask,), _CLOSE], used), pii_rate=0.3)
    call_id = c.assistant("Let me pull up that order.", [("lookup_order", {"order_id": task.oid})])[
        0
    ]
    c.tool(
        "lookup_order",
        call_id,
        {
            "order_id": task.oid,
            "item": task.item,
            "total": task.total,
            "days_since_delivery": task.days,
            "final_sale": task.final_sale,
            "status": "delivered",
        },
    )
    if mode == "truncated":
        return
    decision = task.required if mode == "success" else mode.removeprefix("wrong_")
    text = rng.choice(_TEXT[decision]).format(
        oid=task.oid, name=task.name, total=f"{task.total:.2f}"
    )
    if rng.random() < 0.5:
        cid = c.assistant(
            None, [("submit_decision", {"decision": decision, "order_id": task.oid})]
        )[0]
        c.tool("submit_decision", cid, {"status": "recorded"})
    c.assistant(text)


def pick_mode(rng: random.Random, task: PolicyTask, success: bool) -> str:
    if success:
        return "success"
    return "wrong_" + rng.choice([d for d in DECISIONS if d != task.required])


def expected(mode: str) -> dict[str, bool | None]:
    return {"nsr": mode == "success"}
