"""The evaluator resolves a run's reward spec as training does (SpecResolver with the reward
config); a spec it cannot build is a failed verdict with the reason, not a ConfigError that
the disposition retries forever."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlstream.errors import ConfigError
from rlstream.grading import RewardSpec
from rlstream.registry import Verdict
from rlstream.rewards.config import load_reward_config
from rlstream.services.evaluator.evaluate import EvalJob
from rlstream.services.evaluator.specs import checking_spec, spec_resolver

pytestmark = pytest.mark.unit

REWARDS = """agents:
  support-bot:
    - {name: tool_calling, options: {ordered: false, max_repeats: 2}}
"""


def _job(reward_spec: str, tmp: Path) -> EvalJob:
    return EvalJob(
        run_id="run-1", agent="support-bot", reward_spec=reward_spec, dataset_id="d" * 64,
        heldout=None, base_model="base", baseline_adapter=None, baseline_label="base",
        candidate_adapter=tmp, report_dir=tmp, k=1, max_new_tokens=8, seed=0,
        metric="pass_at_1", min_effect=0.0,
    )  # fmt: skip


def _config(tmp: Path) -> tuple[Path, str]:
    path = tmp / "rewards.yaml"
    path.write_text(REWARDS)
    return path, RewardSpec.for_agent(load_reward_config(path), "support-bot").spec_id


class _Evaluate:
    def __init__(self) -> None:
        self.jobs: list[EvalJob] = []

    def __call__(self, job: EvalJob) -> Verdict:
        self.jobs.append(job)
        return Verdict(decision="reject", reasons=("figures",), metric="pass_at_1")


def test_a_spec_with_options_resolves_through_the_reward_config(tmp_path: Path) -> None:
    path, spec_id = _config(tmp_path)
    inner = _Evaluate()
    verdict = checking_spec(inner, spec_resolver(path))(_job(spec_id, tmp_path))
    assert verdict.reasons == ("figures",) and [j.reward_spec for j in inner.jobs] == [spec_id]


@pytest.mark.parametrize("configured", [True, False])
def test_an_unbuildable_spec_is_a_failed_verdict_with_the_reason(
    tmp_path: Path, configured: bool
) -> None:
    path, spec_id = _config(tmp_path)
    # no config: the options spec cannot be rebuilt; with it: an options hash it lacks
    bad = spec_id.rsplit("#", 1)[0] + "#00000000" if configured else spec_id
    inner = _Evaluate()
    specs = spec_resolver(path if configured else None)
    verdict = checking_spec(inner, specs)(_job(bad, tmp_path))
    assert inner.jobs == []  # never evaluated
    assert verdict.decision == "reject" and verdict.metric is None
    [reason] = verdict.reasons
    assert reason.startswith("evaluation failed: reward spec") and "cannot be built" in reason
    assert verdict.report["status"] == "failed" and verdict.report["stage"] == "reward_spec"


def test_a_missing_reward_config_stops_the_service_at_startup(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        spec_resolver(tmp_path / "nope.yaml")
