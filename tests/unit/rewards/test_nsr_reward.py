from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _helpers_rewards import convo

from rlstream.errors import ConfigError, MissingContextError
from rlstream.rewards.base import RewardContext
from rlstream.rewards.nsr import NsrReward
from rlstream.rewards.policy import load_policy

pytestmark = pytest.mark.unit
POLICY = Path(__file__).resolve().parents[3] / "examples" / "policies" / "refund_policy.yaml"


def refund(ask: str, order: dict[str, Any], *final: tuple[str, Any]) -> Any:
    return convo(
        ("user", ask),
        ("call", [("lookup_order", {"order_id": "ORD-1"})]),
        ("tool", ("lookup_order", json.dumps(order))),
        *final,
    )


ORDER = {"total": 80.0, "days_since_delivery": 10, "final_sale": False}


@pytest.mark.parametrize(
    ("ask", "order", "required"),
    [
        ("refund order ORD-1 please", ORDER, "approve"),
        ("refund order ORD-1 please", {**ORDER, "days_since_delivery": 45}, "deny"),
        ("refund order ORD-1 please", {**ORDER, "final_sale": True}, "deny"),
        (
            "it arrived broken, refund ORD-1",
            {**ORDER, "final_sale": True, "days_since_delivery": 60},
            "approve",
        ),
        ("refund order ORD-1 please", {**ORDER, "total": 900}, "escalate"),
        ("refund my friend's order ORD-1", ORDER, "refuse"),
    ],
)
def test_policy_rules_first_match_wins(ask: str, order: dict[str, Any], required: str) -> None:
    policy = load_policy(POLICY)
    t = refund(ask, order)
    assert policy.decide(policy.extract(t))[0] == required


TEXTS = {
    "approve": "Good news: I've approved your refund of $80.",
    "deny": "I'm sorry, but I can't approve a refund for this order.",
    "escalate": "I've escalated your request to a specialist.",
    "refuse": "Sorry, I can't share details of someone else's order.",
}


@pytest.mark.parametrize("said", sorted(TEXTS))
def test_decision_from_text_including_negated_approval(said: str) -> None:
    t = refund("refund order ORD-1 please", ORDER, ("assistant", TEXTS[said]))
    r = NsrReward(policy=POLICY)(t, RewardContext())
    assert r.passed == (said == "approve")
    assert r.components["decision_found"] == 1.0


def test_decision_tool_is_authoritative() -> None:
    t = refund(
        "refund order ORD-1 please",
        {**ORDER, "days_since_delivery": 45},
        ("call", [("submit_decision", {"decision": "deny"})]),
        ("assistant", "All sorted for you."),
    )
    assert NsrReward(policy=POLICY)(t, RewardContext()).passed


def test_missing_required_fact_fails() -> None:
    t = convo(("user", "refund please"), ("assistant", TEXTS["approve"]))
    r = NsrReward(policy=POLICY)(t, RewardContext())
    assert not r.passed and r.components["facts_complete"] == 0.0


def test_no_policy_raises_missing_context_and_policy_from_context_works() -> None:
    t = refund("refund order ORD-1 please", ORDER, ("assistant", TEXTS["approve"]))
    with pytest.raises(MissingContextError):
        NsrReward()(t, RewardContext())
    assert NsrReward()(t, RewardContext(options={"policy": str(POLICY)})).passed


def test_bad_policies_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        NsrReward(policy=tmp_path / "missing.yaml")
    bad = {"facts": {}, "rules": [{"when": {"nope": 1}, "decision": "deny"}], "default": "approve"}
    with pytest.raises(ConfigError):
        load_policy(bad)
    with pytest.raises(ConfigError):
        load_policy({"facts": {}, "rules": [], "default": "maybe"})
