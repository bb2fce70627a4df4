"""Launchers: hand a released dataset to training (``none``, ``local``, ``kubernetes``).

Pick one with ``RLSTREAM_LAUNCHER`` (entry-point group ``rlstream.launchers``);
:class:`LaunchCoordinator` adds the budget check and the run tracking around it.
"""

from rlstream.launch.base import (
    EXIT_BAD_CONFIG,
    Launcher,
    LaunchError,
    LaunchRequest,
    LaunchResult,
    RunFollower,
    RunSpec,
    RunUpdate,
    plan_run,
)
from rlstream.launch.coordinator import LaunchCoordinator
from rlstream.launch.registry import available_launchers, launcher_from_settings, load_launcher
from rlstream.launch.settings import LaunchSettings
from rlstream.training.config import run_id_for  # the one run-id scheme

__all__ = [
    "EXIT_BAD_CONFIG",
    "LaunchCoordinator",
    "LaunchError",
    "LaunchRequest",
    "LaunchResult",
    "LaunchSettings",
    "Launcher",
    "RunFollower",
    "RunSpec",
    "RunUpdate",
    "available_launchers",
    "launcher_from_settings",
    "load_launcher",
    "plan_run",
    "run_id_for",
]
