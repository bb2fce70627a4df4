"""Grading references kept gradeable after redaction (issue 20, item 5).

A rollout's reference is *kept gradeable* when the reward reaches the same verdict on the
record as ingest stores it (redacted) as on the raw record, without an error, and (maths)
the gold number read from the redacted label is the raw one. Two sets, both built from
``rlstream.sampledata`` (GSM8K itself cannot be fetched here: no data-set hub is reachable),
with the people of the public PII set (``bench/data/pii_public/people.csv``, 3,000
FakeNameGenerator people of 30+ name sets: "Olli-Pekka Pusa", "Margaret O'Brian") as the
people the references name:

* **maths**: the generator's word problems, 4 rollouts per task (as GSM8K's
  ``example_model_solutions``: 4 systems per question), the person of each problem
  ("Natalia sold clips ...", "Weng earns ...") renamed to a public person in every message,
  and as label a GSM8K-format reference naming them: question, worked solution,
  ``#### <answer>``. Graded by ``gsm8k``.
* **support**: the generator's support conversations, 4 rollouts per task, each task's
  customer a public person whose full name is an argument (``customer``) of every tool call
  of the rollout and of the reference calls in the label (``expected_calls``), as a CRM's
  tools take it. Graded by ``tool_calling``.
"""

from __future__ import annotations

import csv
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pii_public import DATA
from rlstream.errors import RlstreamError
from rlstream.grading import RewardSpec, grade_one
from rlstream.ingest.ingestor import Ingestor
from rlstream.rewards.gsm8k import parse_gold
from rlstream.sampledata import generate_transcripts
from rlstream.sampledata._build import fenced
from rlstream.transcript import Transcript

#: the people of the generator's word problems (rlstream.sampledata.arith)
_TEMPLATE_PEOPLE = re.compile(r"\b(?:Natalia|Omar|Keiko|Sven|Weng|Sam|Ava|Leo)\b")
_FENCED = re.compile(r"```json\n(.*?)\n```", re.S)


@dataclass
class Result:
    """Counts for one set: rollouts and task groups, references kept gradeable."""

    rollouts: int = 0
    kept: int = 0
    changed: int = 0  # references redaction changed (they held PII the detectors saw)
    stand_ins: int = 0  # references replaced wholesale by a pii-<hash> stand-in
    raw_errors: int = 0  # rollouts the reward cannot grade even unredacted (not counted)
    groups: set[str] = field(default_factory=set)
    lost_groups: set[str] = field(default_factory=set)
    examples: list[str] = field(default_factory=list)


def _people(seed: int) -> list[str]:
    with (DATA / "people.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    random.Random(seed).shuffle(rows)
    return [f"{r['GivenName']} {r['Surname']}" for r in rows]


def _by_task(ts: list[Transcript]) -> dict[str, list[Transcript]]:
    out: dict[str, list[Transcript]] = {}
    for t in ts:
        out.setdefault(str(t.metadata["task_id"]), []).append(t)
    return out


def _rename(value: Any, old: re.Pattern[str], new: str) -> Any:
    if isinstance(value, str):
        return old.sub(new, value)
    if isinstance(value, dict):
        return {k: _rename(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename(v, old, new) for v in value]
    return value


def maths_records(n_tasks: int, seed: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """(task id, raw canonical record) of the maths set."""
    ts, _ = generate_transcripts(seed, n_tasks, 4, "math")
    people = _people(seed)
    for i, (task, group) in enumerate(sorted(_by_task(ts).items())):
        person = people[i % len(people)]
        given = person if i % 2 else person.split(" ")[0]
        question = next(m.content for m in group[0].messages if m.role == "user") or ""
        work = next(
            (m.content.split("\n")[0] for t in group for m in t.messages if m.role == "assistant"),
            "",
        )
        gold = parse_gold(group[0].label)
        answer = f"{gold:g}"
        reference = _TEMPLATE_PEOPLE.sub(given, f"{question}\n{work}\n#### {answer}")
        for t in group:
            rec = _rename(t.model_dump(mode="json", exclude={"source"}), _TEMPLATE_PEOPLE, given)
            rec["label"] = reference
            yield task, rec


def _with_customer(call: dict[str, Any], person: str) -> dict[str, Any]:
    args = call.get("arguments")
    if not isinstance(args, dict):
        return call
    out = {**call, "arguments": {**args, "customer": person}}
    if out.get("raw_arguments") is not None:
        out["raw_arguments"] = json.dumps(out["arguments"])
    return out


def _fenced_customer(text: str, person: str) -> str:
    def sub(m: re.Match[str]) -> str:
        call = _with_customer(json.loads(m.group(1)), person)
        return fenced(call["name"], call["arguments"])

    return _FENCED.sub(sub, text)


def support_records(n_tasks: int, seed: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """(task id, raw canonical record) of the support set."""
    ts, truth = generate_transcripts(seed, n_tasks, 4, "support")
    people = _people(seed + 1)
    for i, (task, group) in enumerate(sorted(_by_task(ts).items())):
        person = people[i % len(people)]
        ref = truth.tasks[task].reference
        assert isinstance(ref, dict)
        calls = [_with_customer(c, person) for c in ref["expected_calls"]]
        for t in group:
            rec = t.model_dump(mode="json", exclude={"source"})
            for m in rec["messages"]:
                m["tool_calls"] = [_with_customer(c, person) for c in m.get("tool_calls") or []]
                if m["role"] == "assistant" and isinstance(m.get("content"), str):
                    m["content"] = _fenced_customer(m["content"], person)
            for tool in rec["tools"]:
                tool["function"]["parameters"]["properties"]["customer"] = {"type": "string"}
            rec["label"] = {"expected_calls": calls}
            yield task, rec


def _verdict(t: Transcript, spec: RewardSpec) -> bool:
    return grade_one(t, spec).passed


def measure(records: Iterator[tuple[str, dict[str, Any]]], reward: str, show: int = 0) -> Result:
    """Grade each record raw and as ingest stores it; count the references kept gradeable."""
    spec = RewardSpec.from_names([reward])
    res = Result()
    ingest = Ingestor()
    for task, rec in records:
        raw = Transcript.model_validate(rec)
        try:
            want = _verdict(raw, spec)
        except RlstreamError:
            res.raw_errors += 1
            continue
        res.rollouts += 1
        res.groups.add(task)
        red = ingest.process(rec)
        why = ""
        res.changed += red.label != raw.label
        if isinstance(red.label, str) and red.label.startswith("pii-"):
            res.stand_ins += 1
        try:
            got = _verdict(red, spec)
            if got != want:
                why = f"verdict {want} -> {got}"
            elif reward == "gsm8k" and parse_gold(red.label) != parse_gold(raw.label):
                why = f"gold {parse_gold(raw.label)} -> {parse_gold(red.label)}"
        except RlstreamError as exc:
            why = f"{type(exc).__name__}: {exc}"
        if why:
            res.lost_groups.add(task)
            if len(res.examples) < show:
                res.examples.append(f"{why}: label {red.label!r:.160}")
        else:
            res.kept += 1
    return res


def report(n_tasks: int, seed: int, show: int = 0) -> list[str]:
    """One line per set (and ``show`` examples of references lost)."""
    lines: list[str] = []
    sets = (
        ("maths (gsm8k)", "gsm8k", maths_records(n_tasks, seed)),
        ("support (tool_calling)", "tool_calling", support_records(n_tasks, seed)),
    )
    for name, reward, records in sets:
        r = measure(records, reward, show)
        lines.append(
            f"references kept gradeable after redaction, {name}: {r.kept} of {r.rollouts} "
            f"rollouts ({r.changed} references redacted); groups lost {len(r.lost_groups)} of "
            f"{len(r.groups)}; pii- stand-ins {r.stand_ins}; ungradeable even raw {r.raw_errors}"
        )
        lines += [f"ERR references {name}: {e}" for e in r.examples]
    return lines
