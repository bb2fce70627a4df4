"""SpecResolver: the one answer to "which reward spec?" for the CLI, the grader and training."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlstream.errors import ConfigError
from rlstream.grading import RewardSpec, SpecResolver, spec_from_id
from rlstream.rewards.config import load_reward_config

pytestmark = pytest.mark.unit

CONFIG = """
agents:
  maths-bot: [{name: gsm8k, options: {rel_tol: 0.01}}]
  support-bot: [{name: customer_support}, {name: tool_calling, weight: 2}]
default: [{name: outcome}]
"""


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "rewards.yaml"
    path.write_text(CONFIG)
    return path


def test_one_spec_for_every_agent() -> None:
    specs = SpecResolver.from_options("gsm8k:2", None)
    assert specs.for_agent("a") is specs.for_agent(None)
    assert specs.for_agent("a").names == ("gsm8k",) and specs.key("a") is None


def test_per_agent_with_the_default_for_unknown_agents(config_file: Path) -> None:
    specs = SpecResolver.from_options(None, config_file)
    assert specs.for_agent("support-bot").names == ("customer_support", "tool_calling")
    assert specs.key("stranger") is None and specs.for_agent("stranger").names == ("outcome",)
    assert specs.for_agent("stranger") is specs.for_agent("another")  # built once


def test_an_agent_without_rewards_is_a_config_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("agents:\n  a: [{name: outcome}]\n")
    with pytest.raises(ConfigError, match="'stranger'"):
        SpecResolver(config=load_reward_config(path)).for_agent("stranger")


@pytest.mark.parametrize(("reward", "config"), [(None, None), ("outcome", Path("r.yaml"))])
def test_exactly_one_source_of_specs(reward: str | None, config: Path | None) -> None:
    with pytest.raises(ConfigError, match="exactly one of --reward"):
        SpecResolver.from_options(reward, config)


def test_a_missing_config_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"input not found: .*nope\.yaml"):
        SpecResolver.from_options(None, tmp_path / "nope.yaml")


def test_a_bad_entry_fails_before_any_data_is_read(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("agents:\n  a: [{name: gsm8k, options: {no_such_option: 1}}]\n")
    with pytest.raises(ConfigError):
        SpecResolver.from_options(None, path)


def test_by_id_rebuilds_and_refuses_a_different_version() -> None:
    spec = RewardSpec.parse("gsm8k:2,outcome")
    assert SpecResolver().for_id(spec.spec_id).spec_id == spec.spec_id
    assert spec_from_id(spec.spec_id).spec_id == spec.spec_id
    bad = spec.spec_id.replace("gsm8k@", "gsm8k@0.0.")
    with pytest.raises(ConfigError, match="rebuilds as"):
        SpecResolver().for_id(bad)


def test_by_id_finds_specs_with_options_in_the_config(config_file: Path) -> None:
    """An option the id cannot carry: rebuilt from the config file, read on first use."""
    wanted = SpecResolver.from_options(None, config_file).for_agent("maths-bot").spec_id
    with pytest.raises(ConfigError, match="pass the grader's reward config"):
        SpecResolver().for_id(wanted)
    lazy = SpecResolver(config_path=config_file)
    assert lazy.for_id(wanted).spec_id == wanted
    assert lazy.for_id(wanted) is lazy.for_id(wanted)
