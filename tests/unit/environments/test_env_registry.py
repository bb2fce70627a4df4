"""The rlstream.environments entry-point group: built-ins installed, unknown names refused
naming the installed ones, in-process registration, broken plugins said clearly."""

from __future__ import annotations

from typing import Any

import pytest

from rlstream.environments import (
    PythonEnvironment,
    ReplayEnvironment,
    available_environments,
    environment_factory,
    make_environment,
    register,
    unregister,
)
from rlstream.environments.registry import environment_class
from rlstream.errors import ConfigError

pytestmark = pytest.mark.unit


def test_builtins_come_from_the_entry_point_group() -> None:
    assert {"python", "replay"} <= set(available_environments())
    assert environment_class("python") is PythonEnvironment
    assert environment_class("replay") is ReplayEnvironment
    assert isinstance(make_environment("python"), PythonEnvironment)


def test_unknown_name_is_a_config_error_naming_the_installed() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown environment 'nope'; installed: .*python.*replay"
    ):
        make_environment("nope")


def test_bad_options_and_non_environments_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="bad options"):
        make_environment("python", colour="red")
    with pytest.raises(ConfigError, match="expected 'module:attr'"):
        make_environment("python", domain="no_colon")
    with pytest.raises(ConfigError, match="replay needs logged rollouts"):
        make_environment("replay")

    class NoStep:
        def reset(self, task: Any) -> Any:
            return [], []

    register("no-step", NoStep)
    try:
        with pytest.raises(ConfigError, match="does not implement reset"):
            make_environment("no-step")
    finally:
        unregister("no-step")


def test_register_overrides_and_factory_makes_fresh_instances() -> None:
    register("mine", PythonEnvironment)
    try:
        assert "mine" in available_environments()
        factory = environment_factory("mine")
        a, b = factory(), factory()
        assert isinstance(a, PythonEnvironment) and a is not b
    finally:
        unregister("mine")
    assert "mine" not in available_environments()
