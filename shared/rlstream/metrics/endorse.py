"""Endorsed features: what each reward *means* to reward, read from its class.

The hack scan never alarms on an endorsed feature ranking first; it alarms when one
correlates negatively. Rewards declare them as ``Reward.endorsed_features`` (names or glob
patterns such as ``tool:*``).
"""

from __future__ import annotations

from collections.abc import Iterable

from rlstream.errors import ConfigError


def endorsed_features(reward_names: Iterable[str]) -> tuple[str, ...]:
    """Union of the named rewards' endorsed features, sorted.

    A reward that is not registered here endorses nothing: the scan then alarms more, not
    less, which is the safe side.
    """
    from rlstream.rewards.registry import reward_class

    found: set[str] = set()
    for name in set(reward_names):
        try:
            cls = reward_class(name)
        except ConfigError:  # UnknownRewardError included
            continue
        found.update(getattr(cls, "endorsed_features", ()))
    return tuple(sorted(found))
