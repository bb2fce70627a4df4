"""Per-agent reward configuration (YAML): which rewards grade which agent, with weights.

```yaml
agents:
  support-bot:
    - {name: customer_support, weight: 1.0}
    - {name: tool_calling, weight: 2.0, threshold: 0.8}
  refunds-bot:
    - {name: nsr, options: {policy: examples/policies/refund_policy.yaml}}
default:
  - {name: outcome}
```

A bare mapping ``agent -> list`` is accepted too. Relative ``policy`` paths resolve against
the config file's folder, so a config and its policies move together.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rlstream.errors import ConfigError

_PATH_OPTIONS = ("policy",)


class RewardEntry(BaseModel):
    """One reward in an agent's mix."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    weight: float = Field(default=1.0, gt=0.0)
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    options: dict[str, Any] = Field(default_factory=dict)


class RewardConfig(BaseModel):
    """agent -> rewards; ``default`` grades agents the file does not name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    agents: dict[str, tuple[RewardEntry, ...]] = Field(default_factory=dict)
    default: tuple[RewardEntry, ...] = ()

    def entries_for(self, agent: str | None) -> tuple[RewardEntry, ...]:
        """The rewards for ``agent``; ConfigError when neither it nor a default is set."""
        if agent is not None and agent in self.agents:
            return self.agents[agent]
        if self.default:
            return self.default
        raise ConfigError(
            f"no rewards configured for agent {agent!r} and no default; "
            f"configured agents: {sorted(self.agents)}"
        )


def load_reward_config(path: str | Path) -> RewardConfig:
    """Read and validate a reward config file (names are checked against the registry)."""
    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read reward config {p}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"reward config {p} is not valid YAML: {exc}") from exc
    return parse_reward_config(raw, base_dir=p.parent)


def parse_reward_config(raw: Any, base_dir: Path | None = None) -> RewardConfig:
    if not isinstance(raw, dict):
        raise ConfigError("a reward config must be a mapping")
    if "agents" not in raw and "default" not in raw:
        raw = {"agents": raw}
    if base_dir is not None:
        raw = _resolve_paths(raw, base_dir)
    try:
        config = RewardConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"invalid reward config: {exc}") from exc
    from rlstream.rewards.registry import available_rewards

    known = set(available_rewards())
    for agent, entries in [*config.agents.items(), ("default", config.default)]:
        for e in entries:
            if e.name not in known:
                raise ConfigError(
                    f"agent {agent!r}: unknown reward {e.name!r}; available: {sorted(known)}"
                )
    return config


def _resolve_paths(raw: dict[str, Any], base: Path) -> dict[str, Any]:
    def fix(entry: Any) -> Any:
        if not isinstance(entry, dict) or not isinstance(entry.get("options"), dict):
            return entry
        opts = dict(entry["options"])
        for key in _PATH_OPTIONS:
            value = opts.get(key)
            if isinstance(value, str) and not Path(value).is_absolute():
                candidate = base / value
                if candidate.exists():
                    opts[key] = str(candidate)
        return {**entry, "options": opts}

    out = dict(raw)
    if isinstance(raw.get("agents"), dict):
        out["agents"] = {
            a: [fix(e) for e in es] if isinstance(es, list) else es
            for a, es in raw["agents"].items()
        }
    if isinstance(raw.get("default"), list):
        out["default"] = [fix(e) for e in raw["default"]]
    return out
