"""Every model ``rlstream.fastmodel`` builds is complete: every field set, as validation would.

``trusted`` skips validation, so a field added to a model but not to the code that builds it
would otherwise yield objects with ``None`` in a required field. These tests find (in the
source) every model passed to ``trusted``, build each through the real code paths (all input
formats through ingest, every shipped reward, grading) and check each instance; the planted
cases show the check fails when a field is forgotten.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

import rlstream.rewards.base as reward_base
from rlstream.fastmodel import replaced, trusted
from rlstream.formats import FORMATS, to_format
from rlstream.grading import RewardSpec, grade_many
from rlstream.ingest import Ingestor
from rlstream.rewards import RewardContext, RewardResult, make_result
from rlstream.rewards.nsr import NsrReward
from rlstream.sampledata import generate_transcripts
from rlstream.transcript import Message, ToolCall, Transcript

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
SOURCES = (ROOT / "shared" / "rlstream", ROOT / "services" / "rlstream")
POLICY = ROOT / "examples" / "policies" / "refund_policy.yaml"


def built_by_trusted() -> set[str]:
    """The first argument of every ``trusted(...)`` call in the library and the services."""
    found: set[str] = set()
    for root in SOURCES:
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if not (isinstance(node, ast.Call) and node.args):
                    continue
                f = node.func
                name = (
                    f.id
                    if isinstance(f, ast.Name)
                    else f.attr
                    if isinstance(f, ast.Attribute)
                    else ""
                )
                if name == "trusted":
                    found.add(ast.unparse(node.args[0]))
    return found


def incomplete(m: BaseModel) -> list[str]:
    """What a validated instance would have that ``m`` lacks (empty when complete)."""
    cls = type(m)
    name = cls.__name__
    problems = []
    if list(vars(m)) != list(cls.model_fields):
        problems.append(f"{name}: fields {list(vars(m))} != declared {list(cls.model_fields)}")
    for field, info in cls.model_fields.items():
        if info.is_required() and field not in m.model_fields_set:
            problems.append(f"{name}.{field}: required but never set")
    try:
        again = cls.model_validate(m.model_dump(exclude_unset=True))
    except (ValidationError, AttributeError, KeyError, TypeError) as exc:
        problems.append(f"{name}: does not validate: {exc}")
    else:
        if again != m or again.model_fields_set != m.model_fields_set:
            problems.append(f"{name}: differs from its validated copy")
    return problems


def models_in(x: Any) -> Iterator[BaseModel]:
    if isinstance(x, BaseModel):
        yield x
        for v in vars(x).values():
            yield from models_in(v)
    elif isinstance(x, tuple | list):
        for v in x:
            yield from models_in(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from models_in(v)


def built_through_the_library() -> list[BaseModel]:
    """Objects from the paths that use fastmodel: ingest of every format, rewards, grading."""
    out: list[Any] = []
    ingest = Ingestor()
    for domain in ("support", "math"):
        ts, _ = generate_transcripts(5, 3, 3, domain)
        for fmt in FORMATS:
            out.extend(ingest.process(json.loads(json.dumps(to_format(t, fmt)))) for t in ts)
        names = (
            ["customer_support", "tool_calling", "outcome"] if domain == "support" else ["gsm8k"]
        )
        out.extend(grade_many(ts, RewardSpec.from_names(names)))
    order = '{"total": 80.0, "days_since_delivery": 10, "final_sale": false}'
    refund = Transcript(
        conversation_id="nsr-1",
        messages=(
            Message(role="user", content="refund order ORD-1 please"),
            Message(
                role="assistant",
                tool_calls=(ToolCall(id="c1", name="lookup_order", arguments={"order_id": "1"}),),
            ),
            Message(role="tool", name="lookup_order", content=order, tool_call_id="c1"),
            Message(role="assistant", content="I have approved your refund."),
        ),
    )
    out.append(NsrReward(policy=POLICY)(refund, RewardContext()))
    out.append(
        make_result(
            reward="r",
            version="1",
            score=1.5,
            threshold=0.5,
            components={"a": -1.0},
            reasons=["x"],
            turn_scores=[2.0],
        )
    )
    return [m for x in out for m in models_in(x)]


def test_every_model_fastmodel_builds_is_complete() -> None:
    models = built_through_the_library()
    problems = sorted({p for m in models for p in incomplete(m)})
    assert not problems, "\n".join(problems)
    built = built_by_trusted()
    checked = {type(m).__name__ for m in models}
    # a new trusted(X, ...) call site must be exercised above, or this fails
    assert built and built <= checked, f"built by trusted() but never checked: {built - checked}"


def test_the_source_scan_sees_the_known_call_sites() -> None:
    assert {"Transcript", "Message", "ToolCall", "RewardResult", "ScoredRollout"} <= (
        built_by_trusted()
    )


class _Planted(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    a: str
    b: int = 0
    added: str  # the field someone added and forgot in the builder


def test_planted_forgotten_field_is_caught() -> None:
    m = trusted(_Planted, {"a": "x", "b": 1})
    assert incomplete(m) == [
        "_Planted.added: required but never set",
        "_Planted: does not validate: " + str(_validation_error(m)),
    ]
    assert incomplete(trusted(_Planted, {"a": "x", "added": "y"})) == []


def _validation_error(m: BaseModel) -> ValidationError:
    try:
        type(m).model_validate(m.model_dump(exclude_unset=True))
    except ValidationError as exc:
        return exc
    raise AssertionError("validated")


def test_planted_field_added_to_a_real_model_fails_the_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A field added to RewardResult but not to make_result: the check above would fail."""

    class Grown(RewardResult):
        calibration: float

    monkeypatch.setattr(reward_base, "RewardResult", Grown)
    r = make_result(reward="r", version="1", score=0.5, threshold=0.5, components={})
    assert type(r) is Grown
    assert "Grown.calibration: required but never set" in incomplete(r)


def test_trusted_equals_validated_and_keeps_defaults_fresh() -> None:
    a = trusted(
        RewardResult,
        {"reward": "r", "version": "1", "score": 1.0, "passed": True, "threshold": 0.5},
    )
    b = trusted(
        RewardResult,
        {"reward": "r", "version": "1", "score": 1.0, "passed": True, "threshold": 0.5},
    )
    v = RewardResult(reward="r", version="1", score=1.0, passed=True, threshold=0.5)
    assert a == v and list(vars(a)) == list(vars(v)) and a.model_fields_set == v.model_fields_set
    assert a.components is not b.components  # default factories run per instance


def test_replaced_equals_model_copy() -> None:
    t = generate_transcripts(2, 1, 2, "support")[0][0]
    m = t.messages[0]
    update = {"task_key": "k", "task_key_rule": "explicit", "redacted": True}
    pairs = [
        (replaced(t, update), t.model_copy(update=update)),
        (replaced(m, {"content": "x"}), m.model_copy(update={"content": "x"})),
    ]
    for got, want in pairs:
        assert got == want and list(vars(got)) == list(vars(want))
        assert got.model_fields_set == want.model_fields_set
    assert t.task_key is None  # the original is untouched


def test_only_frozen_models() -> None:
    class Loose(BaseModel):
        a: int

    with pytest.raises(TypeError, match="frozen"):
        trusted(Loose, {"a": 1})
