from __future__ import annotations

from pathlib import Path

import pytest

from rlstream.errors import ConfigError
from rlstream.rewards.config import load_reward_config

pytestmark = pytest.mark.unit
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_example_config_loads_with_policy_path_resolved() -> None:
    cfg = load_reward_config(EXAMPLES / "rewards" / "agents.yaml")
    names = [e.name for e in cfg.entries_for("support-bot")]
    assert names == ["customer_support", "tool_calling", "outcome"]
    (nsr,) = cfg.entries_for("refunds-bot")
    assert Path(nsr.options["policy"]).is_file()
    assert [e.name for e in cfg.entries_for("someone-else")] == ["outcome"]


def test_bare_mapping_and_errors(tmp_path: Path) -> None:
    p = tmp_path / "r.yaml"
    p.write_text("bot:\n  - {name: gsm8k, weight: 2}\n")
    cfg = load_reward_config(p)
    assert cfg.entries_for("bot")[0].weight == 2.0
    with pytest.raises(ConfigError):
        cfg.entries_for("other")
    p.write_text("bot:\n  - {name: not_a_reward}\n")
    with pytest.raises(ConfigError, match="unknown reward"):
        load_reward_config(p)
    p.write_text("bot:\n  - {name: gsm8k, weight: -1}\n")
    with pytest.raises(ConfigError):
        load_reward_config(p)
