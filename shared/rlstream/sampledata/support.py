"""Support-agent conversations with tool calls, graded by customer_support, tool_calling and
outcome. Each rollout either succeeds or fails in one named way; the mode fixes which
rewards must pass (``EXPECTED``), so the rewards can be checked against known labels."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from rlstream.sampledata._build import Convo, fenced, rephrase

AGENT = "support-bot"
SYSTEM = (
    "You are Acme's customer support agent. Be polite, look orders up before acting, use the "
    "tools for every change, and escalate when a customer asks for a manager or mentions "
    "legal action."
)


def _fn(name: str, desc: str, props: dict[str, str], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": desc,
            "parameters": {
                "type": "object",
                "properties": {k: {"type": v} for k, v in props.items()},
                "required": required,
            },
        },
    }


TOOLS: tuple[dict[str, Any], ...] = (
    _fn("lookup_order", "Fetch an order", {"order_id": "string"}, ["order_id"]),
    _fn(
        "issue_refund",
        "Refund money",
        {"order_id": "string", "amount": "number"},
        ["order_id", "amount"],
    ),
    _fn("cancel_order", "Cancel an unshipped order", {"order_id": "string"}, ["order_id"]),
    _fn(
        "create_replacement",
        "Ship a replacement",
        {"order_id": "string", "sku": "string"},
        ["order_id", "sku"],
    ),
    _fn(
        "update_shipping",
        "Change shipping speed",
        {"order_id": "string", "speed": "string"},
        ["order_id", "speed"],
    ),
    _fn(
        "escalate",
        "Hand the case to a supervisor",
        {"order_id": "string", "priority": "string", "reason": "string"},
        ["order_id", "priority"],
    ),
)

#: mode -> (customer_support passes, tool_calling passes); outcome passes only on success
EXPECTED: dict[str, tuple[bool, bool]] = {
    "success": (True, True),
    "wrong_args": (True, False),
    "wrong_tool": (True, False),
    "invented_tool": (True, False),
    "spam": (True, False),
    "wrong_order": (True, False),
    "skipped_lookup": (True, False),
    "rude": (False, True),
    "unsafe": (False, True),
    "no_resolution": (False, False),
    "missed_escalation": (False, False),
    "truncated": (False, False),
}
_FAILURES = (
    "wrong_args",
    "wrong_tool",
    "invented_tool",
    "spam",
    "wrong_order",
    "skipped_lookup",
    "rude",
    "unsafe",
    "no_resolution",
)

_ITEMS = (
    ("desk lamp", 49.99),
    ("running shoes", 89.5),
    ("coffee grinder", 129.0),
    ("wool sweater", 74.25),
    ("bluetooth speaker", 59.99),
    ("backpack", 42.0),
)
_NAMES = ("Maria", "James", "Li", "Fatima", "Oliver", "Priya", "Lucas", "Amara", "Noah", "Yuki")
_GREET = ("", "Hi,", "Hello,", "Hey there,", "Good morning,", "Hi team,")
_CLOSE = ("", "Thanks.", "Thank you!", "Appreciate it.", "Thanks in advance.")

# openers per kind; {oid} and {item} are filled in. No escalation trigger words appear in the
# non-escalation kinds, so customer_support's escalation check is unambiguous.
_ASKS: dict[str, tuple[str, ...]] = {
    "refund": (
        "the {item} from order {oid} arrived damaged and I'd like my money back.",
        "my {item} (order #{oid}) came broken. Can I get a refund?",
        "order {oid}: the {item} is cracked, please refund it.",
        "I need a refund for order {oid}, the {item} showed up smashed.",
        "could you refund order {oid}? The {item} was damaged in transit.",
    ),
    "cancel": (
        "please cancel order {oid}, I ordered the {item} by mistake.",
        "I'd like to cancel my order {oid} before it ships.",
        "can you stop order #{oid}? I don't need the {item} anymore.",
        "order {oid} was a mistake, cancel it please.",
    ),
    "replacement": (
        "I got the wrong size for the {item} in order {oid}, can you send the right one?",
        "order {oid} contained the wrong {item}. I'd like a replacement.",
        "the {item} from #{oid} is the wrong colour; please swap it.",
        "can I exchange the {item} in order {oid} for the one I actually ordered?",
    ),
    "expedite": (
        "can order {oid} be upgraded to express shipping? I need the {item} by Friday.",
        "I need order #{oid} faster, please switch it to express.",
        "is it possible to speed up delivery of order {oid}?",
        "please move order {oid} to express delivery.",
    ),
    "escalation": (
        "this is the third time order {oid} is late. I want to speak to a manager.",
        "order #{oid} still hasn't arrived and I'm talking to my lawyer about it. Get me a supervisor.",
        "I've had enough with order {oid}. Escalate this to a human now.",
        "order {oid} is missing again; I will file a chargeback unless a manager calls me.",
    ),
}

_SUCCESS_TEXT: dict[str, tuple[str, ...]] = {
    "refund": (
        "Thanks for your patience, {name}. I've issued a refund of ${amount} to your original payment method; it should appear within 3-5 business days.",
        "I understand. Whatever you need, I'll initiate the refund today. Thank you!",
        "Sorry about the damaged {item}! Your refund of ${amount} has been processed. Is there anything else I can help with?",
    ),
    "cancel": (
        "Done! Order {oid} is cancelled and you won't be charged. Thanks for reaching out.",
        "I've cancelled order {oid} for you, {name}. Thank you for letting us know!",
        "Your order {oid} has been cancelled. Happy to help with anything else.",
    ),
    "replacement": (
        "Sorry for the mix-up, {name}. I've arranged a replacement {item}; it ships today at no cost.",
        "Thanks for your patience! A replacement has been issued and will arrive in 3-4 days.",
    ),
    "expedite": (
        "Good news: I've upgraded order {oid} to express shipping, so it should arrive within 2 days. Thanks!",
        "Order {oid} is updated to express delivery. Thank you for shopping with us!",
    ),
    "escalation": (
        "I'm sorry for the trouble, {name}. I've escalated your case to a supervisor with high priority; they will contact you within 24 hours.",
        "I understand your frustration. I've escalated order {oid} and a supervisor will call you today. Thank you for your patience.",
    ),
}
_RUDE_TEXT = (
    "Fine. Refund issued. Next time read the policy, it's not my problem.",
    "Look, this is getting ridiculous. I processed it, deal with it.",
    "Calm down. It's updated now.",
)
_UNSAFE_TEXT = (
    "Before anything else, please send me your full card number and the CVV so I can confirm. {done}",
    "Please share your password so I can log in as you. {done}",
)
_NO_RESOLUTION = (
    "I've looked at order {oid}. There's nothing more I can do about this today. Thanks for your patience.",
    "Thanks for waiting. I checked order {oid} but I'm afraid this is out of my hands.",
)
_MISSED_ESCALATION = (
    "I'm sorry for the trouble. I've credited your account with a $10 voucher as an apology.",
    "Sorry about that! I've credited $15 to your account for the inconvenience.",
)
_INVENTED = ("process_refund_now", "force_cancel", "auto_fix_order", "priority_override")


@dataclass(frozen=True)
class SupportTask:
    task_id: str
    kind: str
    oid: str
    item: str
    amount: float
    sku: str
    name: str

    def action(self) -> tuple[str, dict[str, Any]]:
        if self.kind == "refund":
            return "issue_refund", {"order_id": self.oid, "amount": self.amount}
        if self.kind == "cancel":
            return "cancel_order", {"order_id": self.oid}
        if self.kind == "replacement":
            return "create_replacement", {"order_id": self.oid, "sku": self.sku}
        if self.kind == "expedite":
            return "update_shipping", {"order_id": self.oid, "speed": "express"}
        return "escalate", {"order_id": self.oid, "priority": "high"}

    def reference(self) -> list[dict[str, Any]]:
        name, args = self.action()
        return [
            {"name": "lookup_order", "arguments": {"order_id": self.oid}},
            {"name": name, "arguments": args},
        ]


def make_task(rng: random.Random, task_id: str) -> SupportTask:
    kind = rng.choice(("refund", "refund", "cancel", "replacement", "expedite", "escalation"))
    item, amount = rng.choice(_ITEMS)
    return SupportTask(
        task_id=task_id,
        kind=kind,
        oid=f"ORD-{rng.randint(10000, 99999)}",
        item=item,
        amount=amount,
        sku=f"SKU-{rng.randint(100, 999)}-{rng.choice('ABCDEFGH')}",
        name=rng.choice(_NAMES),
    )


def pick_mode(rng: random.Random, task: SupportTask, success: bool) -> str:
    if success:
        return "success"
    modes = list(_FAILURES)
    if task.kind == "escalation":
        modes += ["missed_escalation", "missed_escalation"]
    return rng.choice(modes)


def _fill(text: str, task: SupportTask) -> str:
    return text.format(oid=task.oid, item=task.item, amount=f"{task.amount:.2f}", name=task.name)


def _vary_args(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """Equivalent arguments in another surface form: numbers as strings, keys reordered."""
    out = dict(args)
    if "amount" in out and rng.random() < 0.4:
        out["amount"] = f"{out['amount']:.2f}"
    if rng.random() < 0.5:
        out = dict(reversed(list(out.items())))
    if "reason" not in out and out.get("priority") == "high":
        out["reason"] = rng.choice(
            ("customer asked for a manager", "repeated late delivery", "legal threat, needs review")
        )
    return out


def build(c: Convo, rng: random.Random, task: SupportTask, mode: str, used: set[str]) -> None:
    """Write the rollout's messages into ``c`` for the given mode."""
    c.system(SYSTEM)
    ask = rng.choice(_ASKS[task.kind]).format(oid=task.oid, item=task.item)
    c.user(rephrase(rng, [_GREET, (ask,), _CLOSE], used), pii_rate=0.35)
    text_calls = rng.random() < 0.15  # this agent build writes tool calls as fenced JSON

    lookup = ("lookup_order", {"order_id": task.oid})
    act_name, act_args = task.action()
    act_args = _vary_args(rng, act_args)
    if mode == "wrong_args":
        if "amount" in act_args:
            act_args = {**act_args, "amount": round(task.amount * 2, 2)}
        elif "sku" in act_args:
            act_args = {**act_args, "sku": "SKU-000-Z"}
        elif "speed" in act_args:
            act_args = {**act_args, "speed": "standard"}
        elif "priority" in act_args:
            act_args = {**act_args, "priority": "low"}
        else:
            act_args = {**act_args, "order_id": task.oid[:-2] + task.oid[-1] + task.oid[-2] + "7"}
    elif mode == "wrong_tool":
        act_name = "cancel_order" if act_name != "cancel_order" else "issue_refund"
        act_args = (
            {"order_id": task.oid}
            if act_name == "cancel_order"
            else {"order_id": task.oid, "amount": task.amount}
        )
    elif mode == "invented_tool":
        act_name = rng.choice(_INVENTED)

    plan: list[tuple[str, dict[str, Any]]] = [lookup, (act_name, act_args)]
    if mode == "spam":
        plan = [lookup, lookup, lookup, (act_name, act_args)]
    elif mode == "wrong_order":
        plan = [(act_name, act_args), lookup]
    elif mode == "skipped_lookup":
        plan = [(act_name, act_args)]
    elif mode in ("no_resolution", "missed_escalation"):
        plan = [lookup]

    for i, (name, args) in enumerate(plan):
        lead = "Let me pull up that order." if name == "lookup_order" else "One moment."
        if text_calls:
            c.assistant(f"{lead}\n{fenced(name, args)}")
            call_id = None
        else:
            call_id = c.assistant(lead if rng.random() < 0.6 else None, [(name, args)])[0]
        c.tool(name, call_id, _result(rng, task, name, i))
        if mode == "truncated":
            return  # cut after the first tool result: no final assistant turn

    done = _fill(rng.choice(_SUCCESS_TEXT[task.kind]), task)
    if mode == "rude":
        final = rng.choice(_RUDE_TEXT)
    elif mode == "unsafe":
        final = rng.choice(_UNSAFE_TEXT).format(done=done)
    elif mode == "no_resolution":
        final = _fill(rng.choice(_NO_RESOLUTION), task)
    elif mode == "missed_escalation":
        final = rng.choice(_MISSED_ESCALATION)
    else:
        final = done
    c.assistant(final)


def _result(rng: random.Random, task: SupportTask, name: str, i: int) -> dict[str, Any]:
    if name == "lookup_order":
        out: dict[str, Any] = {
            "order_id": task.oid,
            "status": rng.choice(("delivered", "in_transit", "processing")),
            "item": task.item,
            "sku": task.sku,
            "total": task.amount,
        }
        if rng.random() < 0.3:
            from rlstream.sampledata import pii

            out["customer_email"] = pii.email(rng)
        return out
    return {"status": "ok", "reference": f"R{rng.randint(100000, 999999)}"}


def outcome(rng: random.Random, mode: str) -> dict[str, Any]:
    ok = mode == "success"
    form = rng.randrange(10)
    if form == 0:
        return {}  # nothing logged: the outcome reward must refuse, not guess
    out: dict[str, Any] = {}
    if form in (1, 2, 3, 4, 5, 6):
        out["resolved"] = ok
    if form in (3, 4, 5, 6, 7, 8, 9):
        out["csat"] = rng.choice((4, 5)) if ok else rng.choice((1, 2))
    if mode == "truncated":
        out["finish_reason"] = "length"
    return out


def expected(mode: str, out: dict[str, Any]) -> dict[str, bool | None]:
    cs, tc = EXPECTED[mode]
    has_outcome = "resolved" in out or "csat" in out
    return {
        "customer_support": cs,
        "tool_calling": tc,
        "outcome": (mode == "success") if has_outcome else None,
    }
