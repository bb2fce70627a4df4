"""Launchers: hand a released dataset to training (K8s / local launchers come later)."""

from rlstream.launch.base import Launcher, LaunchRequest, LaunchResult, RecordingLauncher

__all__ = ["LaunchRequest", "LaunchResult", "Launcher", "RecordingLauncher"]
