"""Seeded sample transcripts for the benchmarks.

Uses ``rlstream.sampledata.generate_transcripts`` when it is present (the project's own
generator); until then, and as a fallback, a small deterministic generator here makes
multi-rollout groups for the three domains the peers can grade too.
"""

from __future__ import annotations

import random
from typing import Any

from rlstream.transcript import Message, ToolCall, Transcript

DOMAINS = ("customer_support", "tool_calling", "gsm8k")


def transcripts(
    domain: str, *, seed: int, n_tasks: int, rollouts_per_task: int
) -> list[Transcript]:
    """``n_tasks * rollouts_per_task`` transcripts of ``domain``, each carrying its label."""
    try:
        from rlstream.sampledata import generate_transcripts
    except ImportError:
        return _fallback(domain, seed=seed, n_tasks=n_tasks, rollouts_per_task=rollouts_per_task)
    return list(
        generate_transcripts(
            seed=seed, n_tasks=n_tasks, rollouts_per_task=rollouts_per_task, domain=domain
        )
    )


def _fallback(domain: str, *, seed: int, n_tasks: int, rollouts_per_task: int) -> list[Transcript]:
    rng = random.Random(f"{seed}:{domain}")
    make = {"gsm8k": _gsm8k, "tool_calling": _tool, "customer_support": _support}[domain]
    out = []
    for task in range(n_tasks):
        p = rng.choice((0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0))
        spec = make(rng, task)
        for r in range(rollouts_per_task):
            ok = rng.random() < p
            messages, label = spec(rng, ok)
            out.append(
                Transcript(
                    conversation_id=f"{domain}-{seed}-{task}-{r}",
                    messages=tuple(messages),
                    task_key=f"{domain}:{task}",
                    task_key_rule="explicit",
                    label=label,
                    metadata={"domain": domain},
                )
            )
    return out


_Spec = Any


def _gsm8k(rng: random.Random, task: int) -> _Spec:
    a, b, c = rng.randint(2, 90), rng.randint(2, 40), rng.randint(2, 9)
    gold = a * c + b
    q = (
        f"A shop sells {a} boxes of pencils on each of {c} days and {b} more on the last "
        "day. How many boxes does it sell in total?"
    )

    def spec(rng: random.Random, ok: bool) -> tuple[list[Message], Any]:
        ans = gold if ok else gold + rng.choice((-10, -1, 1, 7, a))
        style = rng.randrange(3)
        work = f"Over {c} days it sells {a} * {c} = {a * c} boxes. Adding {b} gives {a * c} + {b}."
        tail = (f"#### {ans:,}", f"The answer is {ans}.", f"So the total is \\boxed{{{ans}}}.")[
            style
        ]
        return [
            Message(role="system", content="You are a careful maths tutor. Show your work."),
            Message(role="user", content=q),
            Message(role="assistant", content=f"{work}\n{tail}"),
        ], str(gold)

    return spec


_TOOLS = (
    ("lookup_order", "order_id"),
    ("cancel_order", "order_id"),
    ("refund_payment", "payment_id"),
    ("track_shipment", "tracking_number"),
)


def _tool(rng: random.Random, task: int) -> _Spec:
    name, arg = rng.choice(_TOOLS)
    value = str(rng.randint(10000, 99999))
    ask = f"Hi, can you {name.replace('_', ' ')} for {arg.replace('_', ' ')} {value}? Thanks."
    expected = {"name": name, "arguments": {arg: value}}

    def spec(rng: random.Random, ok: bool) -> tuple[list[Message], Any]:
        if ok:
            call_name, args = name, {arg: value}
        elif rng.random() < 0.5:
            call_name, args = rng.choice([t for t, _ in _TOOLS if t != name]), {arg: value}
        else:
            call_name, args = name, {arg: str(int(value) + 1)}
        call = ToolCall(id=f"call_{rng.randrange(10**8)}", name=call_name, arguments=args)
        return [
            Message(role="system", content="You are an order-support agent. Use the tools."),
            Message(role="user", content=ask),
            Message(role="assistant", content=None, tool_calls=(call,)),
            Message(role="tool", tool_call_id=call.id, name=call_name, content='{"status": "ok"}'),
            Message(
                role="assistant", content=f"Done: I ran {call_name} for {value}. Anything else?"
            ),
        ], {"expected_calls": [expected]}

    return spec


_INTENTS = (
    ("refund", ["refund", "order"], "I was charged twice for order {n}, I want my money back."),
    ("shipping", ["shipping", "tracking"], "My package for order {n} never arrived. Where is it?"),
    ("account", ["account", "password"], "I am locked out of my account {n} and can't log in."),
)
_GOOD = (
    "I'm sorry about that. I have started the {k0} for your {k1} {n}; you will see it within "
    "3-5 business days. Thank you for your patience!"
)
_BAD = (
    "Please check the website yourself.",
    "Whatever you need, I'll initiate the {k0} today. Thank you!",
    "That's not something we handle. Contact someone else.",
)


def _support(rng: random.Random, task: int) -> _Spec:
    intent, keys, template = rng.choice(_INTENTS)
    n = rng.randint(1000, 9999)
    ask = template.format(n=n)
    label = {"intent": intent, "must_acknowledge": keys}

    def spec(rng: random.Random, ok: bool) -> tuple[list[Message], Any]:
        reply = _GOOD if ok else rng.choice(_BAD)
        return [
            Message(role="system", content="You are a friendly support agent for Acme."),
            Message(role="user", content=ask),
            Message(role="assistant", content="Thanks for reaching out, let me look into that."),
            Message(role="user", content="Please hurry, this is the second time."),
            Message(role="assistant", content=reply.format(k0=keys[0], k1=keys[1], n=n)),
        ], label

    return spec
