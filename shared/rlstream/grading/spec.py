"""RewardSpec: which rewards, with which weights and options, grade a rollout.

``spec_id`` is a stable string naming every reward with its version, weight, threshold and
an options hash; it goes into every ScoredRollout and into its deterministic ``rollout_id``,
so re-grading with the same spec is idempotent and a changed reward version is a new grade.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from rlstream.errors import ConfigError
from rlstream.rewards.base import Reward
from rlstream.rewards.config import RewardConfig, RewardEntry
from rlstream.rewards.registry import get_reward


@dataclass(frozen=True)
class SpecItem:
    entry: RewardEntry
    reward: Reward
    uses_group: bool


@dataclass(frozen=True)
class RewardSpec:
    """An instantiated reward mix. Build with :meth:`from_entries`, :meth:`from_names`,
    :meth:`parse` or :meth:`for_agent`."""

    items: tuple[SpecItem, ...]
    spec_id: str = field(default="")

    def __post_init__(self) -> None:
        if not self.items:
            raise ConfigError("a reward spec needs at least one reward")
        names = [i.entry.name for i in self.items]
        if len(set(names)) != len(names):
            raise ConfigError(f"a reward appears twice in the spec: {names}")
        object.__setattr__(self, "spec_id", _spec_id(self.items))

    @classmethod
    def from_entries(cls, entries: Iterable[RewardEntry]) -> RewardSpec:
        items = []
        for e in entries:
            opts = dict(e.options)
            if e.threshold is not None:
                opts["threshold"] = e.threshold
            reward = get_reward(e.name, **opts)
            items.append(SpecItem(e, reward, bool(getattr(reward, "uses_group", False))))
        return cls(tuple(items))

    @classmethod
    def from_names(
        cls,
        names: Sequence[str],
        weights: Mapping[str, float] | None = None,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        thresholds: Mapping[str, float] | None = None,
    ) -> RewardSpec:
        weights, options, thresholds = weights or {}, options or {}, thresholds or {}
        return cls.from_entries(
            RewardEntry(
                name=n,
                weight=weights.get(n, 1.0),
                threshold=thresholds.get(n),
                options=dict(options.get(n, {})),
            )
            for n in names
        )

    @classmethod
    def parse(cls, text: str) -> RewardSpec:
        """``"customer_support:2,tool_calling"``: names with optional weights (CLI form)."""
        names: list[str] = []
        weights: dict[str, float] = {}
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            name, _, w = part.partition(":")
            names.append(name.strip())
            if w:
                try:
                    weights[name.strip()] = float(w)
                except ValueError as exc:
                    raise ConfigError(f"bad weight in reward spec {part!r}") from exc
        return cls.from_names(names, weights)

    @classmethod
    def for_agent(cls, config: RewardConfig, agent: str | None) -> RewardSpec:
        return cls.from_entries(config.entries_for(agent))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(i.entry.name for i in self.items)

    @property
    def uses_group(self) -> bool:
        return any(i.uses_group for i in self.items)


def _spec_id(items: tuple[SpecItem, ...]) -> str:
    parts = []
    for it in sorted(items, key=lambda i: i.entry.name):
        r = it.reward
        fp = getattr(r, "fingerprint", "") or ""
        # a policy file is identified by its content hash, not by where it happens to lie
        skip = {"threshold", "policy"} if fp else {"threshold"}
        opts = {k: v for k, v in it.entry.options.items() if k not in skip}
        blob = orjson.dumps([opts, fp], option=orjson.OPT_SORT_KEYS, default=str)
        digest = hashlib.sha256(blob).hexdigest()[:8]
        parts.append(f"{it.entry.name}@{r.version}*{it.entry.weight:g}>={r.threshold:g}#{digest}")
    return "+".join(parts)
