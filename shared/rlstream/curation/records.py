"""Dataset rows for GRPO (prompts + verifier labels), DPO (pairs) and SFT (passes).

Messages use the OpenAI chat shape (``tool_calls`` with JSON-string arguments,
``tool_call_id`` on tool results) because that is what HF chat templates, TRL and OpenRLHF
read. Every row carries ``task_key``, ``policy_version`` and ``policy``: the model id that
produced the row's assistant turns (the transcripts' ``model``, which ``rlstream serve``
sets to the serving model's id; null when the logs did not say). On-policy training
selects rows on it (``TrainConfig.on_policy``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import orjson

from rlstream.curation.curate import KeptGroup
from rlstream.metrics.features import last_assistant_index, tool_signature
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message, Transcript

Row = dict[str, Any]


def message_json(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.text}
    if m.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": c.type,
                "function": {
                    "name": c.name,
                    "arguments": c.raw_arguments
                    if c.raw_arguments is not None
                    else orjson.dumps(c.arguments, option=orjson.OPT_SORT_KEYS).decode(),
                },
            }
            for c in m.tool_calls
        ]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        out["name"] = m.name
    return out


def trained_messages(t: Transcript) -> tuple[Message, ...]:
    """The conversation up to and including its last assistant turn: a trailing user
    thanks, stop marker or tool result is how it ended, not something to train on."""
    last = last_assistant_index(t)
    return t.messages if last is None else t.messages[: last + 1]


def split_prompt(t: Transcript) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(prompt, completion): the prefix up to the first assistant turn, and the rest up to
    the last assistant turn."""
    cut = next((i for i, m in enumerate(t.messages) if m.role == "assistant"), len(t.messages))
    msgs = [message_json(m) for m in t.messages[:cut]]
    return msgs, [message_json(m) for m in trained_messages(t)[cut:]]


def completion_length(completion: Sequence[dict[str, Any]]) -> int:
    """Characters the policy produced: assistant text plus tool-call arguments."""
    total = 0
    for m in completion:
        if m["role"] == "assistant":
            total += len(m["content"])
            total += sum(
                len(c["function"]["name"]) + len(c["function"]["arguments"])
                for c in m.get("tool_calls", ())
            )
    return total


def _mode(values: Sequence[str | None]) -> str | None:
    """Most common non-null value, ties broken by sort order (deterministic)."""
    counts = Counter(v for v in values if v is not None)
    if not counts:
        return None
    return min(counts, key=lambda v: (-counts[v], v))


def policy_version(rollouts: Sequence[ScoredRollout]) -> str | None:
    return _mode([r.transcript.policy_version for r in rollouts])


def policy_of(rollouts: Sequence[ScoredRollout]) -> str | None:
    """The group's producing model: the most common ``ScoredRollout.policy``."""
    return _mode([r.policy for r in rollouts])


def pair_policy(chosen: ScoredRollout, rejected: ScoredRollout) -> str | None:
    """Both sides' model when they agree; a pair of two models is on-policy for neither."""
    return chosen.policy if chosen.policy == rejected.policy else None


def verifier_label(group: KeptGroup) -> dict[str, Any]:
    """Grader context for re-grading fresh GRPO samples: gold label, expected tool calls."""
    passing = [r for r in group.rollouts if r.passed]
    sigs = {r.rollout_id: orjson.dumps(tool_signature(r.transcript)).decode() for r in passing}
    freq = Counter(sigs.values())
    # the most common tool sequence among passes is the reference behaviour
    canonical = min(
        passing, key=lambda r: (-freq[sigs[r.rollout_id]], sigs[r.rollout_id], r.rollout_id)
    )
    gold = next(
        (r.transcript.label for r in (*passing, *group.rollouts) if r.transcript.label is not None),
        None,
    )
    versions = sorted({(res.reward, res.version) for r in group.rollouts for res in r.results})
    return {
        "task_key": group.task_key,
        "policy_version": policy_version(group.rollouts),
        "label": gold,
        "expected_tool_calls": [
            {"name": c.name, "arguments": c.arguments} for c in canonical.transcript.tool_calls()
        ],
        "reference_answer": canonical.transcript.final_assistant_text(),
        "reference_rollout_id": canonical.rollout_id,
        "reward_spec": _mode([r.reward_spec for r in group.rollouts]),
        "reward_versions": {name: version for name, version in versions},
        "group": {"n": group.n, "passes": group.passes, "pass_rate": group.pass_rate},
    }


def grpo_row(group: KeptGroup) -> Row:
    """One prompt per group (from its first rollout); the label is a JSON string."""
    first = group.rollouts[0]
    prompt, _ = split_prompt(first.transcript)
    label = verifier_label(group)
    row: Row = {
        "prompt": prompt,
        "label": orjson.dumps(label, option=orjson.OPT_SORT_KEYS).decode(),
        "task_key": group.task_key,
        "policy_version": label["policy_version"],
        "policy": policy_of(group.rollouts),
    }
    if first.transcript.tools:
        row["tools"] = list(first.transcript.tools)
    return row


def dpo_pairs(
    group: KeptGroup, max_ratio: float
) -> list[tuple[ScoredRollout, ScoredRollout, float]]:
    """Length-matched (chosen, rejected, ratio) pairs; each rollout used at most once.

    Greedy over all pass x fail pairs by closest length ratio, so the pairs do not teach
    "longer wins" (or "shorter wins").
    """
    lengths = {
        r.rollout_id: completion_length(split_prompt(r.transcript)[1]) for r in group.rollouts
    }
    passes = [r for r in group.rollouts if r.passed]
    fails = [r for r in group.rollouts if not r.passed]
    candidates = []
    for p in passes:
        for f in fails:
            a, b = lengths[p.rollout_id] + 1, lengths[f.rollout_id] + 1
            ratio = max(a, b) / min(a, b)
            if ratio <= max_ratio:
                candidates.append((ratio, p.rollout_id, f.rollout_id, p, f))
    candidates.sort(key=lambda x: x[:3])
    used: set[str] = set()
    pairs = []
    for ratio, pid, fid, p, f in candidates:
        if pid in used or fid in used:
            continue
        used.update((pid, fid))
        pairs.append((p, f, ratio))
    pairs.sort(key=lambda x: (x[0].rollout_id, x[1].rollout_id))
    return pairs


def dpo_row(task_key: str, chosen: ScoredRollout, rejected: ScoredRollout, ratio: float) -> Row:
    prompt, chosen_msgs = split_prompt(chosen.transcript)
    rejected_prompt, rejected_msgs = split_prompt(rejected.transcript)
    return {
        "prompt": prompt,
        "chosen": chosen_msgs,
        "rejected": rejected_msgs,
        "task_key": task_key,
        "policy_version": policy_version([chosen, rejected]),
        "policy": pair_policy(chosen, rejected),
        "chosen_rollout_id": chosen.rollout_id,
        "rejected_rollout_id": rejected.rollout_id,
        "chosen_score": chosen.score,
        "rejected_score": rejected.score,
        "length_ratio": round(ratio, 6),
        "same_prompt": rejected_prompt == prompt,
    }


def sft_row(r: ScoredRollout) -> Row:
    """A passing conversation up to its last assistant turn; ``loss_mask`` is 1 on
    assistant messages only."""
    msgs = [message_json(m) for m in trained_messages(r.transcript)]
    return {
        "messages": msgs,
        "loss_mask": [1 if m["role"] == "assistant" else 0 for m in msgs],
        "task_key": r.task_key,
        "policy_version": r.transcript.policy_version,
        "policy": r.policy,
        "rollout_id": r.rollout_id,
        "score": r.score,
    }


def heldout_label(task_key: str, rollouts: Sequence[ScoredRollout]) -> dict[str, Any]:
    """The grader context for re-grading fresh samples of this prompt.

    The same shape as a GRPO row's label: the logged gold ``label`` when there is one, else
    the calls of the most common passing answer as ``expected_tool_calls``.
    """
    ordered = sorted(rollouts, key=lambda r: r.rollout_id)
    group = KeptGroup(task_key=task_key, rollouts=tuple(ordered))
    if group.passes:
        return verifier_label(group)
    gold = next((r.transcript.label for r in ordered if r.transcript.label is not None), None)
    versions = sorted({(res.reward, res.version) for r in ordered for res in r.results})
    return {
        "task_key": task_key,
        "policy_version": policy_version(ordered),
        "label": gold,
        "expected_tool_calls": [],
        "reference_answer": None,
        "reference_rollout_id": None,
        "reward_spec": _mode([r.reward_spec for r in ordered]),
        "reward_versions": dict(versions),
        "group": {"n": group.n, "passes": 0, "pass_rate": 0.0},
    }


def heldout_row(task_key: str, rollouts: Sequence[ScoredRollout]) -> dict[str, Any]:
    """One ``heldout.jsonl`` line: the prompt (messages before the first assistant turn),
    the grader context as a JSON string, the task key, agent and declared tools."""
    first = min(rollouts, key=lambda r: r.rollout_id)
    prompt, _ = split_prompt(first.transcript)
    label = heldout_label(task_key, rollouts)
    row: dict[str, Any] = {
        "prompt": prompt,
        "label": orjson.dumps(label, option=orjson.OPT_SORT_KEYS).decode(),
        "task_key": task_key,
        "agent": first.transcript.agent or "",
        "reward_spec": first.reward_spec,
        "policy_version": label["policy_version"],
        "policy": policy_of(rollouts),
        "rollout_ids": sorted(r.rollout_id for r in rollouts),
    }
    if first.transcript.tools:
        row["tools"] = list(first.transcript.tools)
    return row
