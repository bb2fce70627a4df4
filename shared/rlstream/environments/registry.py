"""Find environments by name through the ``rlstream.environments`` entry-point group.

A third-party environment registers like the shipped ones (a line in its package's
``[project.entry-points."rlstream.environments"]`` naming a class or zero-argument-plus-
options factory); :func:`register` adds one in-process (tests, notebooks). Options are
keyword arguments of the class (``python``: ``domain="pkg.mod:attr"``; ``replay``:
``logs="conversations.jsonl"``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, partial
from importlib.metadata import entry_points
from typing import Any

from rlstream.environments.base import Environment
from rlstream.errors import ConfigError

GROUP = "rlstream.environments"
_LOCAL: dict[str, Callable[..., Any]] = {}


@lru_cache(maxsize=1)
def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def available_environments() -> list[str]:
    """Every name :func:`make_environment` accepts, sorted."""
    return sorted({*_entry_points(), *_LOCAL})


def environment_class(name: str) -> Callable[..., Any]:
    """The class (or factory) registered under ``name``; ConfigError lists the installed."""
    if name in _LOCAL:
        return _LOCAL[name]
    ep = _entry_points().get(name)
    if ep is None:
        raise ConfigError(
            f"unknown environment {name!r}; installed: "
            f"{', '.join(available_environments()) or '(none)'}"
        )
    try:
        cls = ep.load()
    except Exception as exc:  # a broken plugin is a configuration problem, said clearly
        raise ConfigError(f"environment {name!r} failed to load from {ep.value}: {exc}") from exc
    if not callable(cls):
        raise ConfigError(f"environment {name!r} ({ep.value}) is not a class or factory")
    return cls  # type: ignore[no-any-return]


def make_environment(name: str, **options: Any) -> Environment:
    """One instance of ``name`` with its options; refused when it lacks reset/step."""
    try:
        env = environment_class(name)(**options)
    except ConfigError:
        raise
    except TypeError as exc:
        raise ConfigError(f"environment {name!r}: bad options {sorted(options)}: {exc}") from exc
    if not isinstance(env, Environment):
        raise ConfigError(f"environment {name!r} does not implement reset(task) and step(message)")
    return env


def environment_factory(name: str, **options: Any) -> Callable[[], Environment]:
    """A zero-argument factory (one fresh instance per episode), checked once now."""
    make_environment(name, **options)
    return partial(make_environment, name, **options)


def register(name: str, cls: Callable[..., Any]) -> None:
    """Register an environment in-process (overrides an entry point of the same name)."""
    _LOCAL[name] = cls


def unregister(name: str) -> None:
    _LOCAL.pop(name, None)
