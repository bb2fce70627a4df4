"""run_evaluation resolves a dataset's spec id as training does: a spec with options (set in
the reward config, which its id cannot carry) grades the samples through the resolver."""

from __future__ import annotations

from pathlib import Path

import pytest
from eval_helpers import ScriptedSampler, orders_dataset

from rlstream.errors import ConfigError
from rlstream.evaluation import EvalRequest, ModelRef, run_evaluation
from rlstream.evaluation.run import eval_spec
from rlstream.grading import RewardSpec, SpecResolver
from rlstream.rewards.config import load_reward_config

pytestmark = pytest.mark.unit

REWARDS = """agents:
  support-bot:
    - {name: tool_calling, options: {ordered: false, max_repeats: 2}}
"""


def _spec(tmp: Path) -> tuple[Path, str]:
    path = tmp / "rewards.yaml"
    path.write_text(REWARDS)
    return path, RewardSpec.for_agent(load_reward_config(path), "support-bot").spec_id


def test_a_spec_with_options_is_resolved_through_the_reward_config(tmp_path: Path) -> None:
    path, spec_id = _spec(tmp_path)
    with pytest.raises(ConfigError, match="reward config"):  # the id alone: refused
        eval_spec(spec_id)
    resolver = SpecResolver(config_path=path)
    assert eval_spec(spec_id, resolver).spec_id == spec_id
    ds = orders_dataset(tmp_path, n_tasks=40)
    request = EvalRequest(
        baseline=ModelRef(base="base", label="baseline"),
        candidate=ModelRef(base="base", adapter_dir="adapter", label="candidate"),
        heldout=ds / "heldout.jsonl",
        reward_spec=spec_id,
        k=1,
    )
    report = run_evaluation(
        request, sampler_factory=lambda ref: ScriptedSampler(lambda u: "Sure."), specs=resolver
    )
    assert report.reward_spec == spec_id and len(report.prompts) > 0


def test_names_with_weights_still_parse_without_a_resolver() -> None:
    assert eval_spec("tool_calling:2").names == ("tool_calling",)
