"""``demo --cycles``' gate: its tool-error guard can hold at the demo's ~30 held-out prompts
when the base model never calls a tool (the default 0.05 cannot), and still rejects a
candidate whose calls fail often."""

from __future__ import annotations

from eval_helpers import report_from, sample

from rlstream.evaluation import GateConfig, decide
from rlstream.pipeline.cycles import cycles_gate


def _run(errors: int, n: int = 30) -> tuple[list[list], list[list]]:
    base = [[sample(False, attempted=False)] for _ in range(n)]
    cand = [[sample(i < 20, tool_error=i >= n - errors)] for i in range(n)]
    return base, cand


def test_a_candidate_with_no_tool_error_cannot_promote_at_thirty_prompts_by_default() -> None:
    d = decide(report_from(*_run(0)), GateConfig(min_prompts=20))
    assert d.decision == "reject" and any("not shown within absolute limit" in r for r in d.reasons)


def test_the_cycles_gate_promotes_up_to_four_erring_prompts_in_thirty() -> None:
    for errors in (0, 4):
        d = decide(report_from(*_run(errors)), cycles_gate(min_prompts=20))
        assert d.promote, (errors, d.reasons)


def test_the_cycles_gate_rejects_a_candidate_erring_on_five_of_thirty() -> None:
    d = decide(report_from(*_run(5)), cycles_gate(min_prompts=20))
    assert d.decision == "reject"
    assert any(r.startswith("guard tool_error_rate") and "0.300" in r for r in d.reasons)


def test_the_cycles_gate_keeps_every_other_default() -> None:
    gate, default = cycles_gate(), GateConfig()
    assert gate.model_dump(exclude={"guards"}) == default.model_dump(exclude={"guards"})
    assert {k: v for k, v in gate.guards.items() if k != "tool_error_rate"} == {
        k: v for k, v in default.guards.items() if k != "tool_error_rate"
    }
