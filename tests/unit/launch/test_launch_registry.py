"""Launchers come from the `rlstream.launchers` entry points; `auto` follows the settings."""

from __future__ import annotations

import pytest

from rlstream.launch import LaunchError, LaunchSettings, launcher_from_settings, load_launcher
from rlstream.launch.kubernetes import KubernetesLauncher
from rlstream.launch.local import LocalLauncher
from rlstream.launch.none import NoneLauncher

pytestmark = pytest.mark.unit


def test_entry_points_resolve_each_launcher() -> None:
    s = LaunchSettings()
    assert isinstance(load_launcher("none", s), NoneLauncher)
    assert isinstance(load_launcher("local", s), LocalLauncher)
    assert isinstance(load_launcher("kubernetes", s), KubernetesLauncher)
    with pytest.raises(LaunchError, match="unknown launcher 'slurm'"):
        load_launcher("slurm", s)


def test_auto_is_local_on_embedded_settings_and_none_with_a_real_database() -> None:
    assert launcher_from_settings(LaunchSettings()).name == "local"
    assert launcher_from_settings(LaunchSettings(postgres_dsn="postgresql://x/y")).name == "none"
    explicit = LaunchSettings(postgres_dsn="postgresql://x/y", launcher="kubernetes")
    assert launcher_from_settings(explicit).name == "kubernetes"


def test_settings_read_json_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLSTREAM_K8S_NODE_SELECTOR", '{"pool": "gpu"}')
    monkeypatch.setenv("RLSTREAM_K8S_TOLERATIONS", "[]")
    monkeypatch.setenv("RLSTREAM_K8S_GPUS", "0")
    s = LaunchSettings()
    assert s.k8s_node_selector == {"pool": "gpu"} and s.k8s_tolerations == [] and s.k8s_gpus == 0
