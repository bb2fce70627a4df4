"""While rows (the ``whileai`` package's ``row-v1.json``) in and out of rlstream.

Rows come from whileai's own helpers (``to_row`` over its typed objects, ``rows()``, and an
offline ``simulate()`` run in ``conftest``-free form below); the schema is the installed
package's own file. The round trip is checked over every property the schema's row
definition lists, so it grows with the schema.
"""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from whileai.simulations.schema import (
    Judgment,
    Marker,
    PolicyRef,
    Privileged,
    Rollout,
    ScorerRef,
    Step,
    Task,
    World,
    from_row,
    to_row,
)
from whileai.simulations.schema import rows as wai_rows

from rlstream.formats import detect_format, parse_record, to_format
from rlstream.formats.while_rows import ROW_FIELDS
from rlstream.grading import GradeFailure, RewardSpec, grade_many
from rlstream.ingest import Ingestor
from rlstream.metrics.features import truncation_reason
from rlstream.sampledata import generate_transcripts
from rlstream.transcript import Message, ToolCall, Transcript

pytestmark = pytest.mark.unit

SCHEMA: dict[str, Any] = json.loads(
    (resources.files("whileai.simulations") / "schemas" / "row-v1.json").read_text()
)
ROW_PROPS: dict[str, Any] = SCHEMA["$defs"]["row"]["properties"]
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def schema_errors(row: dict[str, Any]) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message[:200]}" for e in VALIDATOR.iter_errors(row)]


def _example(name: str, spec: dict[str, Any]) -> Any:
    """A valid, PII-free value for a schema property that whileai's to_row did not write."""
    special: dict[str, Any] = {
        "markers": {"asked_first": 1.0},
        "calibration": {"n": 4, "pass_rate": 0.5, "pass_rate_ci95": [0.15, 0.85]},
        "gold_labels": [{"label": 1, "annotator": "a1", "kind": "hand"}],
        "steps": [{"text": "ok"}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    if name in special:
        return special[name]
    if "const" in spec:
        return spec["const"]
    if "enum" in spec:
        return spec["enum"][-1]
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    return {
        "string": f"{name} value",
        "integer": 3,
        "number": 0.25,
        "boolean": True,
        "object": {"note": name},
        "array": [0.5] if spec.get("items", {}).get("type") == "number" else [{"k": name}],
        None: f"{name} value",
    }[kind]


def full_row() -> dict[str, Any]:
    """whileai's to_row over typed objects with every field set, then every schema property
    it does not project filled in, so the row has them all."""
    task = Task(
        task_id="sc-full-1",
        spec_id="spec-support",
        prompt="Where is my parcel? It was due on Monday.",
        world=World(seed=7, state="order placed", faults={"lookup": {"mode": "timeout"}}),
        privileged=Privileged(reference="ships on Tuesday"),
        axes={"tier": "ordinary", "tone": "curt", "intent_known": True, "history": "none"},
    )
    steps = [
        Step(tool="lookup", arguments={"order": "A-17"}, result={"status": "delayed", "n": 2}),
        Step(tool="notes", arguments={}, result="no notes"),
        Step(user="And when will it arrive?"),
        Step(text="It ships on Tuesday.", logprob=-1.5, n_tokens=6, truncated=None),
    ]
    rollout = Rollout(
        rollout_id="r-full-1",
        task_id=task.task_id,
        policy=PolicyRef(name="support-bot", model="support-bot-v3", version="support-bot-v3@9f"),
        index=2,
        steps=steps,
        final_text="It ships on Tuesday.",
        extra={
            "opener": "Hello, how can I help?",
            "opening": "greeting",
            "fault_detected": True,
            "logprob": -3.25,
            "n_tokens": 14,
            "token_logprobs": [-0.5, -0.25],
            "sampling": {"temperature": 0.7, "max_tokens": 256, "model": "support-bot-v3"},
            "writer_model": "template",
            "user_model": "sim-user",
            "lineage": {"source": "simulate", "parent": "sc-full-1"},
            "quality": "good",
            "quality_reason": "on topic",
            "quality_scores": {"relevance": 0.9},
            "tools": [{"name": "lookup", "description": "find an order"}],
            "group_id": "grp-7",
            "conversation_id": "otel-conv-1",
            "ts": 1700000000123456789,
            "rollout_index_present": True,
        },
    )
    judgments = [
        Judgment(
            rollout_id="r-full-1",
            scorer=ScorerRef(name="helpfulness", kind="judge", version="j-2"),
            reward=0.75,
            status="ok",
            reason="answered the question",
            failure_class="none",
            evidence={"judge_meta": {"prompt": "v2"}},
        ),
        Judgment(rollout_id="r-full-1", scorer=ScorerRef("llm", "judge"), reward=1, reason="ok"),
        Judgment(rollout_id="r-full-1", scorer=ScorerRef("qwen", "judge"), reward=0.5),
    ]
    markers = [Marker(rollout_id="r-full-1", name="apology", value=0.0)]
    row = to_row(task, rollout, judgments, markers)
    row["privileged"] = {"reference": "ships on Tuesday", "principle": "be exact"}
    for name, spec in ROW_PROPS.items():
        if name not in row:
            row[name] = _example(name, spec)
    return row


def _engine_rows() -> list[dict[str, Any]]:
    """Rows whileai's own engine writes: an offline simulate() (template writer, the
    deterministic conduct grader), with a callable agent that calls a tool."""
    import whileai as wai

    tools = [{"name": "lookup_order", "description": "Look up an order by id"}]

    def agent(message: str) -> dict[str, Any]:
        return {
            "steps": [
                {"tool": "lookup_order", "arguments": {"order_id": "A-1"}, "result": {"ok": 1}},
                {"text": "Your order has shipped."},
            ],
            "final_text": "Your order has shipped.",
        }

    data = wai.simulate(
        agent, tools=tools, simulator=False, budget=4, grade="conduct", seed=0, mode="rl",
        repeats=2, situations=2,
    )  # fmt: skip
    return [json.loads(json.dumps(r, default=str)) for r in data.rows()]


@pytest.fixture(scope="module")
def engine_rows() -> list[dict[str, Any]]:
    return _engine_rows()


def _ingest(row: dict[str, Any]) -> Transcript:
    return Ingestor().process(copy.deepcopy(row))


def test_row_fields_are_the_installed_schemas() -> None:
    assert list(ROW_FIELDS) == list(ROW_PROPS)


def test_full_row_is_valid_and_has_every_property() -> None:
    row = full_row()
    assert set(ROW_PROPS) <= set(row)
    assert schema_errors(row) == []


@pytest.mark.parametrize("path", ["parse", "ingest"])
def test_round_trip_keeps_every_schema_field(path: str) -> None:
    row = full_row()
    t = parse_record(copy.deepcopy(row)) if path == "parse" else _ingest(row)
    assert t.format == "while"
    back = to_format(t, "while")
    for name in ROW_PROPS:
        assert (name in back, back.get(name)) == (name in row, row.get(name)), name
    assert back == row
    assert from_row(back) == from_row(row)  # whileai reads the same objects back


def test_what_the_transcript_holds() -> None:
    t = _ingest(full_row())
    assert t.task_key == "scenario_id:sc-full-1"
    assert t.conversation_id == "otel-conv-1"
    assert (t.model, t.policy_version) == ("support-bot-v3", "support-bot-v3@9f")
    assert t.outcome["reward"] == 0.75 and t.outcome["judge_name"] == "helpfulness"
    assert t.outcome["reason"] == "answered the question"
    assert t.metadata["rollout_index"] == 2 and t.metadata["markers"] == {"apology": 0.0}
    assert t.label == "ships on Tuesday"
    assert [m.role for m in t.messages] == [
        "assistant", "user", "assistant", "tool", "assistant", "tool", "user", "assistant",
    ]  # fmt: skip
    call = t.messages[2].tool_calls[0]
    assert (call.name, call.arguments) == ("lookup", {"order": "A-17"})
    assert json.loads(t.messages[3].text) == {"status": "delayed", "n": 2}
    assert t.messages[-1].extra == {"logprob": -1.5, "n_tokens": 6}
    assert t.tools == ({"name": "lookup", "description": "find an order"},)


def test_whileai_rows_helper_round_trips_and_grades() -> None:
    rows = wai_rows(
        ["What is 2 + 2?"],
        [["4", "5"]],
        lambda prompt, completion: 1.0 if completion == "4" else 0.0,
        references=["4"],
        task_ids=["t-add"],
        markers=[[{"polite": 1}, {"polite": 0}]],
    )
    transcripts = [_ingest(dict(r)) for r in rows]
    for r, t in zip(rows, transcripts, strict=True):
        assert to_format(t, "while") == r
    assert {t.task_key for t in transcripts} == {"task_id:t-add"}
    assert [t.label for t in transcripts] == ["4", "4"]
    scored = list(grade_many(transcripts, RewardSpec.from_names(["outcome"])))
    assert [s.passed for s in scored if not isinstance(s, GradeFailure)] == [True, False]


def test_engine_rows_ingest_losslessly(engine_rows: list[dict[str, Any]]) -> None:
    assert len(engine_rows) >= 2
    for row in engine_rows:
        assert detect_format(row) == "while"
        t = _ingest(row)
        assert t.task_key == f"scenario_id:{row['scenario_id']}"
        back = to_format(t, "while")
        assert back == row
        assert from_row(back) == from_row(row)


def _odd_rows() -> list[dict[str, Any]]:
    base: dict[str, Any] = {"schema_version": "1", "prompt": "Order status?"}
    return [
        {**base, "steps": [], "final_text": "Shipped."},  # no messages key
        {**base, "steps": [{"text": "Checking."}], "final_text": ""},
        {**base, "steps": [{"text": "Checking."}], "final_text": "Something else."},
        {**base, "steps": [{"tool": "t", "arguments": {"a": 1}}], "final_text": "x"},
        {
            **base,
            "steps": [{"tool": "t", "arguments": None, "result": None, "text": "Hm"}],
            "final_text": "Hm",
        },
        {
            **base,
            "steps": [
                {"tool": "t", "arguments": [1, 2], "result": [1, {"b": None}]},
                {"tool": "t", "arguments": {}, "result": 3.5},
            ],
            "final_text": "ok",
        },
        {**base, "steps": ["not a step", {"text": "ok"}], "final_text": "ok"},
        {**base, "steps": [{"user": "hi", "text": "both"}], "final_text": ""},
        {
            **base,
            "prompt": "",
            "steps": [{"user": "first"}, {"text": "reply"}],
            "final_text": "reply",
        },
        {**base, "opener": "", "steps": [], "final_text": "x"},
        {
            **base,
            "steps": [{"text": "a", "truncated": True, "custom": {"k": [1]}}],
            "final_text": "a",
            "messages": [{"role": "user", "content": "edited"}],
        },
        {
            **base,
            "steps": [],
            "final_text": "x",
            "tools": [],
            "task_id": "t-9",
            "metadata": {"team": "a"},
            "rlstream": "not ours",
            "model_version": 3,
        },
        {**base, "steps": [], "final_text": "x", "conversation_id": "", "tools": ["lookup"]},
        {"schema_version": "1", "prompt": 5, "steps": [], "final_text": None},
    ]


@pytest.mark.parametrize("row", _odd_rows())
def test_odd_rows_round_trip(row: dict[str, Any]) -> None:
    for t in (parse_record(copy.deepcopy(row)), _ingest(row)):
        assert to_format(t, "while") == row


@pytest.mark.parametrize("domain", ["support", "math"])
def test_rlstream_transcripts_become_valid_rows_and_come_back(domain: str) -> None:
    ts, _ = generate_transcripts(6, 2, 2, domain)
    for t in ts:
        row = to_format(t, "while")
        assert schema_errors(row) == []
        back = parse_record(row)
        assert back.model_dump(exclude={"format"}) == t.model_dump(exclude={"format"})
        assert to_format(back, "while") == row


TAU = Path(__file__).parents[2] / "golden" / "tau_bench"
#: fields ingest sets (task key, redaction flag), not the format: re-ingest sets them again
_INGEST_FIELDS = {"format", "task_key", "task_key_rule", "redacted"}


@pytest.mark.parametrize("name", ["gpt-4o-airline.slice.jsonl", "gpt-4o-airline.mixed8.jsonl"])
def test_third_party_logs_become_valid_rows_and_come_back(name: str) -> None:
    """tau-bench's own trajectories (OpenAI chat, parallel tool calls, ids), ingested."""
    lines = (TAU / name).read_text().splitlines()
    for line in filter(None, lines):
        t = _ingest(json.loads(line))
        row = to_format(t, "while")
        assert schema_errors(row) == []
        back = parse_record(row)
        assert back.model_dump(exclude=_INGEST_FIELDS) == t.model_dump(exclude=_INGEST_FIELDS)


def test_generic_transcript_details_ride_in_the_rlstream_object() -> None:
    t = Transcript(
        conversation_id="c-1",
        messages=(
            Message(role="system", content="You are terse."),
            Message(role="user", content="refund A-1", extra={"lang": "en"}),
            Message(
                role="assistant",
                content="Looking.",
                tool_calls=(
                    ToolCall(
                        id="k1", name="lookup", arguments={"o": "A-1"}, raw_arguments='{"o":"A-1"}'
                    ),
                    ToolCall(id="k2", name="policy", arguments={}),
                ),
            ),
            Message(role="tool", content="found", tool_call_id="k1", name="lookup"),
            Message(
                role="tool", content="30 days", tool_call_id="k2", name="policy", is_error=True
            ),
            Message(role="assistant", content="Refunded."),
        ),
        agent="support",
        agent_version="2.1",
        outcome={"resolved": True, "reward": 1},
        metadata={"task_id": "refund", "user": "persona-1"},
        label="Refunded",
    )
    row = to_format(t, "while")
    assert schema_errors(row) == []
    assert row["steps"][0] == {"text": "Looking."}
    assert row["steps"][1]["tool"] == "lookup" and row["task_id"] == "refund"
    assert row["reward"] == 1 and row["privileged"] == {"reference": "Refunded"}
    assert "user" not in row  # a schema field: only a While row's own value goes there
    assert parse_record(row).model_dump(exclude={"format"}) == t.model_dump(exclude={"format"})


def test_pii_is_redacted_and_the_row_stays_valid() -> None:
    row = {
        "schema_version": "1",
        "prompt": "My email is jane.doe@example.com, where is my order?",
        "steps": [{"tool": "lookup", "arguments": {"email": "jane.doe@example.com"},
                   "result": {"phone": "+1 415 555 0100"}}, {"text": "Found it."}],
        "final_text": "Found it.",
        "scenario_id": "sc-pii",
    }  # fmt: skip
    back = to_format(_ingest(row), "while")
    text = json.dumps(back)
    assert "jane.doe@example.com" not in text and "555 0100" not in text
    assert "<EMAIL" in back["prompt"]
    assert schema_errors(back) == []
    assert back["final_text"] == "Found it." and back["scenario_id"] == "sc-pii"


def test_outcome_reward_grades_the_rows_verdict() -> None:
    rows = [
        {"schema_version": "1", "prompt": "q", "steps": [], "final_text": "a", "reward": r,
         "label_source": "conduct", "scenario_id": "s"}
        for r in (1, 0, None)
    ]  # fmt: skip
    out = list(grade_many([_ingest(r) for r in rows], RewardSpec.from_names(["outcome"])))
    graded = [o for o in out if not isinstance(o, GradeFailure)]
    assert sorted(s.passed for s in graded) == [False, True]
    assert [f.code for f in out if isinstance(f, GradeFailure)] == ["missing_context"]


def test_truncated_and_errored_rows_are_not_trained_on() -> None:
    base: dict[str, Any] = {"schema_version": "1", "prompt": "q", "final_text": "a"}
    cut = _ingest({**base, "steps": [{"text": "a", "truncated": True}]})
    length = _ingest({**base, "steps": [{"text": "a"}], "finish_reason": "length"})
    error = _ingest({**base, "steps": [{"text": "a"}], "finish_reason": "error"})
    fine = _ingest({**base, "steps": [{"text": "a"}], "finish_reason": "stop"})
    assert [truncation_reason(t) for t in (cut, length, error, fine)] == [
        "length", "length", "errored", None,
    ]  # fmt: skip


def test_only_stamped_rows_are_detected() -> None:
    row = {"prompt": "q", "steps": [], "final_text": "a", "scenario_id": "s"}  # version 0
    assert detect_format({**row, "schema_version": "1"}) == "while"
    with pytest.raises(Exception, match="matches no supported format"):
        detect_format(row)
    assert parse_record(row, "while").metadata["scenario_id"] == "s"
    canonical = json.loads(Transcript(conversation_id="c", messages=()).dump_json())
    assert detect_format(canonical) == "canonical"
