"""Launchers by name, through the ``rlstream.launchers`` entry-point group.

Each entry point names a class built as ``cls(settings)``; third parties add their own
(a Slurm or RayJob launcher) by declaring one in their package.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import cast

from rlstream.launch.base import Launcher, LaunchError
from rlstream.launch.settings import LaunchSettings

GROUP = "rlstream.launchers"


def available_launchers() -> list[str]:
    return sorted(ep.name for ep in entry_points(group=GROUP))


def load_launcher(name: str, settings: LaunchSettings) -> Launcher:
    """The launcher registered as ``name``, built from ``settings``."""
    eps = {ep.name: ep for ep in entry_points(group=GROUP)}
    if name not in eps:
        raise LaunchError(f"unknown launcher {name!r}; registered: {sorted(eps)}")
    factory = eps[name].load()
    return cast(Launcher, factory(settings))


def launcher_from_settings(settings: LaunchSettings | None = None) -> Launcher:
    """The configured launcher (``RLSTREAM_LAUNCHER``; ``auto`` resolves by settings)."""
    s = settings or LaunchSettings()
    return load_launcher(s.resolved_launcher(), s)
