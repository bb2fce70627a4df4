"""Content fields (label, outcome, tool-call arguments) are redacted in place, identifiers
are hashed: the per-field policy of docs/pii.md, one test per field kind (issue 20, item 5).

A gold answer that named a person with PII glued into a word ("Mary-Kate") used to be
replaced wholesale by a ``pii-<hash>`` stand-in, so the gsm8k reward found no number in
the label and the group was lost; a support reference naming a customer did the same.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from rlstream.grading import RewardSpec, grade_one
from rlstream.ingest.ingestor import Ingestor
from rlstream.pii.fields import glued_spans, redact_fields
from rlstream.pii.redact import Redactor, redact_transcript
from rlstream.rewards.gsm8k import parse_gold
from rlstream.transcript.model import Message, ToolCall, Transcript

pytestmark = pytest.mark.unit

#: GSM8K's answer format (calculator annotations, "#### answer") with a hyphenated name,
#: which the text detectors spare (glued) and the identifier check found
MATHS = (
    "Mary-Kate sold 48/2 = <<48/2=24>>24 clips in May.\n"
    "Therefore Mary-Kate sold 48+24 = <<48+24=72>>72 clips altogether.\n#### 72"
)
JERRY = "Tom is 3 years older than Jerry. Therefore Jerry's age is 10 - 3 = <<10-3=7>>7.\nA: 7"
CUSTOMER = "Kenji Tanaka"
CONTACT = "kenji@example.jp-1"  # an address glued to a suffix: text detectors spare it


def _maths_record(label: Any, answer: str = "24 + 48 = 72 clips.\n#### 72") -> dict[str, Any]:
    return {
        "conversation_id": "gsm-1",
        "messages": [
            {"role": "user", "content": "Mary-Kate sold clips to 48 of her friends ..."},
            {"role": "assistant", "content": answer},
        ],
        "label": label,
    }


def test_a_gold_answer_naming_a_person_keeps_its_numbers_and_grades() -> None:
    """The reproduction: before the fix the label came back as ``pii-<hash>``."""
    t = Ingestor().process(_maths_record(MATHS))
    label = t.label
    assert isinstance(label, str) and not label.startswith("pii-"), label
    assert "Mary" not in label and "Kate" not in label
    assert "<<48/2=24>>24" in label and "<<48+24=72>>72" in label and label.endswith("#### 72")
    assert "Therefore" in label and label.count("<NAME_") == 2
    assert parse_gold(label) == 72.0
    spec = RewardSpec.from_names(["gsm8k"])
    assert grade_one(t, spec).passed
    wrong = Ingestor().process(_maths_record(MATHS, "So 71.\n#### 71"))
    assert not grade_one(wrong, spec).passed  # the label still decides, not a default


def test_a_name_after_therefore_is_the_name_alone() -> None:
    """ "Therefore Jerry" was one NAME span: the word lost and Jerry given a second
    placeholder in the same answer."""
    t = Ingestor().process(_maths_record(JERRY))
    assert isinstance(t.label, str)
    assert "Therefore <NAME_" in t.label and "Jerry" not in t.label
    first, second = (t.label.split(p)[1][:8] for p in (" than ", "Therefore "))
    assert first == second  # one person, one placeholder
    assert parse_gold(t.label) == 7.0


@pytest.mark.parametrize("form", ["str", "dict"])
def test_label_forms_stay_gradeable(form: str) -> None:
    label: Any = MATHS if form == "str" else {"answer": MATHS, "solver": f"by {CUSTOMER}"}
    t = Ingestor().process(_maths_record(label))
    assert parse_gold(t.label) == 72.0
    if form == "dict":  # one numbering per conversation: two people, two placeholders
        assert isinstance(t.label, dict) and t.label["solver"].startswith("by <NAME_")
        assert t.label["solver"][3:] not in t.label["answer"]


def test_a_support_reference_naming_a_customer_still_matches_the_calls() -> None:
    """A reference call with the customer's name and a glued address in its arguments and
    the rollout's own call are redacted alike (placeholders of one conversation), so the
    tool_calling reward still compares them; an outcome naming the customer keeps its text."""
    args = {"customer": CUSTOMER, "contact": CONTACT, "order_id": "ORD-55120"}
    record = {
        "conversation_id": "sup-1",
        "messages": [
            {"role": "user", "content": f"Hi, I'm {CUSTOMER}, refund ORD-55120 please."},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "name": "issue_refund", "arguments": args}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "assistant", "content": "Done, the refund is issued."},
        ],
        "label": {"expected_calls": [{"name": "issue_refund", "arguments": args}]},
        "outcome": {"resolved": True, "reference": f"Refund issued to {CUSTOMER} ({CONTACT})"},
        "tools": [{"type": "function", "function": {"name": "issue_refund", "parameters": {}}}],
    }
    t = Ingestor().process(record)
    assert isinstance(t.label, dict)
    ref_args = t.label["expected_calls"][0]["arguments"]
    call_args = next(m for m in t.messages if m.tool_calls).tool_calls[0].arguments
    assert ref_args == call_args
    assert ref_args["customer"].startswith("<NAME_") and ref_args["order_id"] == "ORD-55120"
    assert ref_args["contact"] == "<EMAIL_1>-1"  # in place, the suffix kept
    reference = t.outcome["reference"]
    assert isinstance(reference, str) and reference.startswith("Refund issued to <NAME_")
    assert "kenji" not in repr(t.model_dump()).lower()
    assert grade_one(t, RewardSpec.from_names(["tool_calling"])).passed


def _fields(t: Transcript) -> Transcript:
    r = Redactor()
    return redact_fields(redact_transcript(t, r), r)


def test_identifiers_are_hashed_content_redacted_in_place_keys_both() -> None:
    """One field of each kind: an identifier with glued PII becomes a stand-in (equal
    values stay equal), a content value keeps its words and numbers with a placeholder in
    place, a dict key with glued PII becomes a stand-in, metadata values are identifiers."""
    glued = "jane.doe@example.com-7"  # the text detectors spare a glued address
    t = Transcript(
        conversation_id=f"conv-{glued}",
        agent=f"bot-{glued}",
        messages=(
            Message(
                role="assistant",
                tool_calls=(ToolCall(id=f"call-{glued}", name="lookup", arguments={"u": glued}),),
            ),
        ),
        metadata={"user_id": glued, f"by-{glued}": 1},
        outcome={"owner": glued, "score": 3},
        label={"answer": f"{glued} is 42", "n": 42},
    )
    out = _fields(t)
    for ident in (out.conversation_id, out.agent, out.metadata["user_id"]):
        assert ident.startswith("pii-") and "jane" not in ident
    assert out.messages[0].tool_calls[0].id.startswith("pii-")
    assert next(k for k in out.metadata if k != "user_id").startswith("pii-")  # a key
    assert out.outcome == {"owner": "<EMAIL_1>-7", "score": 3}
    assert out.label == {"answer": "<EMAIL_1>-7 is 42", "n": 42}
    assert out.messages[0].tool_calls[0].arguments == {"u": "<EMAIL_1>-7"}
    assert "jane" not in repr(out.model_dump())


def test_glued_spans_ignore_placeholders_and_prose_context() -> None:
    # a separator inside a placeholder starts no search ("1>'s age is 10 ...")
    assert glued_spans("<NAME_1>'s age is 10 - 3 = 7. A: 1234") == []
    # a word found only because a shorter context starts next to it is prose, not glue
    assert glued_spans("<NAME_1> succeeded Wren as the MPP in 1967-1971.") == []
    s = "contact kenji@example.jp-1 or v-123-45-6789"
    assert [(s[sp.start : sp.end], sp.kind) for sp in glued_spans(s)] == [
        ("kenji@example.jp", "EMAIL"),
        ("123-45-6789", "SSN"),
    ]


def test_bench_references_all_stay_gradeable() -> None:
    """bench/pii_references.py at a small size: every maths and support reference (people
    of the public PII set) grades as it did raw; before the fix 8 of 1,636 maths rollouts
    at 400 tasks became stand-ins whose digits read as another gold answer."""
    bench = str(Path(__file__).resolve().parents[3] / "bench")
    sys.path.insert(0, bench)
    try:
        refs = __import__("pii_references")
    finally:
        sys.path.remove(bench)
    for records, reward in (
        (refs.maths_records(60, 0), "gsm8k"),
        (refs.support_records(30, 0), "tool_calling"),
    ):
        r = refs.measure(records, reward, show=3)
        assert r.rollouts >= 100 and r.changed > r.rollouts // 3, (reward, r.changed)
        assert r.kept == r.rollouts and r.stand_ins == 0, r.examples
