"""Find rewards by name through the ``rlstream.rewards`` entry-point group.

Third-party rewards register exactly like the shipped ones (a line in their package's
``[project.entry-points."rlstream.rewards"]``); :func:`register` adds one in-process, which
tests and notebooks use.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any

from rlstream.errors import ConfigError, UnknownRewardError
from rlstream.rewards.base import Reward

GROUP = "rlstream.rewards"
_LOCAL: dict[str, type[Any]] = {}


@lru_cache(maxsize=1)
def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def available_rewards() -> list[str]:
    """Every reward name that :func:`get_reward` accepts, sorted."""
    return sorted({*_entry_points(), *_LOCAL})


def reward_class(name: str) -> type[Any]:
    """The class registered under ``name``; :class:`UnknownRewardError` lists the options."""
    if name in _LOCAL:
        return _LOCAL[name]
    ep = _entry_points().get(name)
    if ep is None:
        raise UnknownRewardError(
            f"unknown reward {name!r}; available: {', '.join(available_rewards()) or '(none)'}"
        )
    try:
        cls = ep.load()
    except Exception as exc:  # a broken plugin is a configuration problem, said clearly
        raise ConfigError(f"reward {name!r} failed to load from {ep.value}: {exc}") from exc
    return cls  # type: ignore[no-any-return]


def get_reward(name: str, **options: Any) -> Reward:
    """Instantiate the reward ``name`` with its options (threshold included)."""
    reward = reward_class(name)(**options)
    if not isinstance(reward, Reward):
        raise ConfigError(f"reward {name!r} does not implement the Reward protocol")
    return reward


def register(name: str, cls: type[Any]) -> None:
    """Register a reward class in-process (overrides an entry point of the same name)."""
    _LOCAL[name] = cls


def unregister(name: str) -> None:
    _LOCAL.pop(name, None)
