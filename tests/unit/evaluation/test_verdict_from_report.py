"""Verdict.from_report: the one translation of an evaluation report into the registry's
verdict (the evaluator service and the demo's promote stage both use it)."""

from __future__ import annotations

import pytest

from rlstream.registry import Verdict

pytestmark = pytest.mark.unit


def test_the_metric_figures_and_the_report_without_per_prompt_rows() -> None:
    report = {
        "delta": {"metric": "pass_at_1", "mean": 0.1, "ci_low": 0.02, "ci_high": 0.2},
        "baseline": {"pass_at_1": 0.4, "mean_reward": 0.5},
        "candidate": {"pass_at_1": 0.5, "mean_reward": 0.6},
        "prompts": [{"id": 1}],
    }
    v = Verdict.from_report(report, "promote", ["ci above min_effect"], "out/report.json")
    assert (v.decision, v.reasons, v.metric) == ("promote", ("ci above min_effect",), "pass_at_1")
    assert (v.baseline_value, v.candidate_value) == (0.4, 0.5)
    assert (v.delta_mean, v.delta_ci_low, v.delta_ci_high) == (0.1, 0.02, 0.2)
    assert "prompts" not in v.report and v.report_path == "out/report.json"
