"""The seeded generator: several rephrased rollouts per task, known pass rates, planted PII,
truncated rollouts and exact duplicates, with a :class:`Truth` saying what each one is."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from rlstream.errors import ConfigError
from rlstream.sampledata import arith, decisions, support
from rlstream.sampledata._build import EPOCH, Convo, pick_pass_rate, stable_id, sub_rng
from rlstream.sampledata.truth import ConversationTruth, PiiTruth, TaskTruth, Truth
from rlstream.transcript import Transcript

#: accepted domain spellings -> canonical domain
DOMAINS = {
    "support": "support",
    "customer_support": "support",
    "tool_calling": "support",
    "math": "math",
    "gsm8k": "math",
    "policy": "policy",
    "nsr": "policy",
}
TRUNCATE_RATE = 0.04
DUPLICATE_RATE = 0.03


def _task(domain: str, rng: random.Random, task_id: str) -> Any:
    if domain == "support":
        return support.make_task(rng, task_id)
    if domain == "math":
        return arith.make_task(rng, task_id)
    return decisions.make_task(rng, task_id)


def generate_transcripts(
    seed: int, n_tasks: int, rollouts_per_task: int, domain: str
) -> tuple[list[Transcript], Truth]:
    """``n_tasks * rollouts_per_task`` raw transcripts (plus a few exact duplicates) and the
    truth about them. Same arguments -> identical output, on any machine."""
    if domain not in DOMAINS:
        raise ConfigError(f"unknown sample domain {domain!r}; one of {sorted(DOMAINS)}")
    if n_tasks < 0 or rollouts_per_task < 1:
        raise ConfigError("n_tasks must be >= 0 and rollouts_per_task >= 1")
    dom = DOMAINS[domain]
    rng = sub_rng(seed, "generate", dom)
    out: list[Transcript] = []
    tasks: dict[str, TaskTruth] = {}
    convs: dict[str, ConversationTruth] = {}
    planted: list[PiiTruth] = []

    for ti in range(n_tasks):
        task_id = stable_id(f"{dom}-task-", seed, ti, n=10)
        task = _task(dom, rng, task_id)
        p = pick_pass_rate(rng)
        used: set[str] = set()
        n_pass = 0
        for ri in range(rollouts_per_task):
            cid = stable_id("conv-", seed, dom, ti, ri)
            success = rng.random() < p
            truncated = rng.random() < TRUNCATE_RATE
            t, conv, pii = _rollout(dom, rng, task, cid, ti, ri, success, truncated, used)
            out.append(t)
            convs[cid] = conv
            planted.extend(pii)
            n_pass += conv.expected_pass
        tasks[task_id] = _task_truth(dom, task, p, rollouts_per_task, n_pass)

    # exact duplicates: same content under a new conversation id (a re-logged rollout)
    for t in list(out):
        if rng.random() < DUPLICATE_RATE:
            dup_id = stable_id("conv-dup-", seed, t.conversation_id)
            out.append(t.model_copy(update={"conversation_id": dup_id}))
            base = convs[t.conversation_id]
            convs[dup_id] = base.model_copy(
                update={"conversation_id": dup_id, "duplicate_of": t.conversation_id}
            )
            planted.extend(
                p.model_copy(update={"conversation_id": dup_id})
                for p in planted
                if p.conversation_id == t.conversation_id
            )

    truth = Truth(seed=seed, domains=(dom,), tasks=tasks, conversations=convs, pii=tuple(planted))
    return out, truth


def _rollout(
    dom: str,
    rng: random.Random,
    task: Any,
    cid: str,
    ti: int,
    ri: int,
    success: bool,
    truncated: bool,
    used: set[str],
) -> tuple[Transcript, ConversationTruth, list[PiiTruth]]:
    start = EPOCH + timedelta(hours=ti * 3 + ri, minutes=rng.randint(0, 59))
    c = Convo(cid, rng, start)
    outcome: dict[str, Any] = {}
    tools: tuple[dict[str, Any], ...] = ()
    if dom == "support":
        mode = "truncated" if truncated else support.pick_mode(rng, task, success)
        support.build(c, rng, task, mode, used)
        outcome = support.outcome(rng, mode)
        expected = support.expected(mode, outcome)
        agent, label, tools = support.AGENT, None, support.TOOLS
    elif dom == "math":
        mode = "truncated" if truncated else ("success" if success else "wrong_answer")
        arith.build(c, rng, task, mode, used)
        expected, agent, label = arith.expected(mode), arith.AGENT, task.label
    else:
        mode = "truncated" if truncated else decisions.pick_mode(rng, task, success)
        decisions.build(c, rng, task, mode, used)
        expected, agent, label, tools = (
            decisions.expected(mode),
            decisions.AGENT,
            None,
            decisions.TOOLS,
        )
    if mode == "truncated" and not outcome:
        outcome = {"finish_reason": "length"}  # a logged cut, as real agent logs record it
    end = c.messages[-1].timestamp
    t = Transcript(
        conversation_id=cid,
        messages=tuple(c.messages),
        tools=tools,
        model=rng.choice(("gpt-4o-mini-2024-07-18", "claude-3-5-haiku-20241022", "acme-agent-8b")),
        agent=agent,
        agent_version=rng.choice(("3.2.0", "3.2.1")),
        started_at=start,
        ended_at=end,
        outcome=outcome,
        label=label,
        metadata={
            "task_id": task.task_id,
            "domain": dom,
            "channel": rng.choice(("chat", "email", "web")),
        },
    )
    truth = ConversationTruth(
        conversation_id=cid,
        task_id=task.task_id,
        domain=dom,
        mode=mode,
        expected=expected,
        expected_pass=all(v is True for v in expected.values()),
        truncated=mode == "truncated",
    )
    return t, truth, c.planted


def _task_truth(dom: str, task: Any, p: float, n: int, n_pass: int) -> TaskTruth:
    if dom == "support":
        return TaskTruth(
            task_id=task.task_id,
            domain=dom,
            agent=support.AGENT,
            kind=task.kind,
            true_pass_rate=p,
            n_rollouts=n,
            n_expected_pass=n_pass,
            reference={"expected_calls": task.reference()},
        )
    if dom == "math":
        return TaskTruth(
            task_id=task.task_id,
            domain=dom,
            agent=arith.AGENT,
            kind=task.kind,
            true_pass_rate=p,
            n_rollouts=n,
            n_expected_pass=n_pass,
            label=task.label,
        )
    return TaskTruth(
        task_id=task.task_id,
        domain=dom,
        agent=decisions.AGENT,
        kind="refund_decision",
        true_pass_rate=p,
        n_rollouts=n,
        n_expected_pass=n_pass,
        required_decision=task.required,
    )
