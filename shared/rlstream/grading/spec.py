"""RewardSpec: which rewards, with which weights and options, grade a rollout.

``spec_id`` is a stable string naming every reward with its version, weight, threshold and
an options hash; it goes into every ScoredRollout and into its deterministic ``rollout_id``,
so re-grading with the same spec is idempotent and a changed reward version is a new grade.

:class:`SpecResolver` is the one place that answers "which spec?": by agent (the CLI's
``--reward`` / ``--reward-config`` and the grader service's settings) or by ``spec_id``
(training rebuilds the spec stamped in a dataset row).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from rlstream.errors import ConfigError
from rlstream.rewards.base import Reward, is_group_aware
from rlstream.rewards.config import RewardConfig, RewardEntry, load_reward_config
from rlstream.rewards.registry import available_rewards, get_reward

_ITEM = re.compile(r"^(?P<name>[^@]+)@(?P<version>[^*]+)\*(?P<weight>[^>]+)>=(?P<thr>[^#]+)#")


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
            items.append(SpecItem(e, reward, is_group_aware(reward)))
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


def spec_from_id(spec_id: str) -> RewardSpec:
    """Rebuild a RewardSpec from its id; refuse one whose rebuilt id differs (a reward
    version or an option the id cannot carry changed since it was stamped)."""
    names: list[str] = []
    weights: dict[str, float] = {}
    thresholds: dict[str, float] = {}
    for part in spec_id.split("+"):
        m = _ITEM.match(part)
        if m is None:
            raise ConfigError(f"not a reward spec id: {spec_id!r}")
        name = m["name"]
        names.append(name)
        weights[name] = float(m["weight"])
        thresholds[name] = float(m["thr"])
    spec = RewardSpec.from_names(names, weights, thresholds=thresholds)
    if spec.spec_id != spec_id:
        raise ConfigError(
            f"reward spec {spec_id!r} rebuilds as {spec.spec_id!r}: a reward version or its "
            "options differ from what graded the dataset"
        )
    return spec


class SpecResolver:
    """Which RewardSpec grades what; each spec is built once (reward construction is not free).

    * ``single``: one spec for every agent (``--reward``, the grader's ``reward_spec``);
    * ``config`` / ``config_path``: per agent from a reward YAML (unknown agents get its
      ``default``; ConfigError when there is none). ``config_path`` is read on first use.

    :meth:`for_agent` serves grading; :meth:`for_id` serves training, which rebuilds the
    spec stamped in a dataset row and, when the id cannot carry its options, finds it among
    the config's specs.
    """

    def __init__(
        self,
        single: RewardSpec | None = None,
        config: RewardConfig | None = None,
        config_path: Path | None = None,
    ) -> None:
        self.single = single
        self._config = config
        self.config_path = config_path
        self._by_agent: dict[str | None, RewardSpec] = {}
        self._by_id: dict[str, RewardSpec] = {}
        self._configured: dict[str, RewardSpec] | None = None

    @classmethod
    def from_options(cls, reward: str | None, reward_config: Path | None) -> SpecResolver:
        """Exactly one of a CLI spec (``"a:2,b"``) or a reward YAML, checked up front: every
        configured agent's spec is built now, so a bad entry fails before any data is read."""
        if (reward is None) == (reward_config is None):
            raise ConfigError(
                "give exactly one of --reward NAME[,NAME] or --reward-config FILE "
                f"(available rewards: {', '.join(available_rewards())})"
            )
        if reward is not None:
            return cls(single=RewardSpec.parse(reward))
        assert reward_config is not None
        if not reward_config.exists():
            raise ConfigError(f"input not found: {reward_config}")
        resolver = cls(config=load_reward_config(reward_config))
        for agent in resolver.config.agents if resolver.config else ():
            resolver.for_agent(agent)
        return resolver

    @property
    def config(self) -> RewardConfig | None:
        if self._config is None and self.config_path is not None:
            self._config = load_reward_config(self.config_path)
        return self._config

    def key(self, agent: str | None) -> str | None:
        """The config entry ``agent`` is graded by (None: the one spec, or the default)."""
        config = None if self.single is not None else self.config
        if config is None:
            return None
        return agent if agent in config.agents else None

    def for_agent(self, agent: str | None) -> RewardSpec:
        if self.single is not None:
            return self.single
        k = self.key(agent)
        spec = self._by_agent.get(k)
        if spec is None:
            config = self.config
            if config is None:
                raise ConfigError("no reward spec: give a reward or a reward config")
            spec = RewardSpec.for_agent(config, agent)  # the error names the agent
            self._by_agent[k] = spec
        return spec

    def for_id(self, spec_id: str) -> RewardSpec:
        spec = self._by_id.get(spec_id)
        if spec is not None:
            return spec
        try:
            spec = spec_from_id(spec_id)
        except ConfigError as exc:
            spec = self._configured_specs().get(spec_id)
            if spec is None:
                hint = (
                    f"no agent in {self.config_path} has it"
                    if self.config_path
                    else "pass the grader's reward config (--reward-config rewards.yaml)"
                )
                raise ConfigError(f"{exc}; {hint}") from exc
        self._by_id[spec_id] = spec
        return spec

    def _configured_specs(self) -> dict[str, RewardSpec]:
        """spec_id -> spec for every agent of the config (and its default), built once."""
        if self._configured is None:
            self._configured = {}
            config = self.config
            agents: list[str | None] = [*config.agents, None] if config else []
            for agent in agents:
                assert config is not None
                try:
                    s = RewardSpec.for_agent(config, agent)
                except ConfigError:
                    continue
                self._configured.setdefault(s.spec_id, s)
        return self._configured
