"""Environments: one protocol (reset / step) for evaluation and online RL.

Built in: ``replay`` (user turns and tool results replayed from a task's logged
trajectories) and ``python`` (tool functions over a state, graded by the state they leave).
Others register through the ``rlstream.environments`` entry-point group. See
docs/environments.md.
"""

from rlstream.environments.base import (
    Environment,
    EnvironmentFailure,
    StepResult,
    Task,
    Tools,
    task_id_of,
)
from rlstream.environments.episode import (
    Episode,
    Sampler,
    assistant_message,
    run_episode,
    run_episode_sync,
)
from rlstream.environments.guard import DEFAULT_TIMEOUT_S
from rlstream.environments.python_env import Domain, PythonEnvironment, load_domain
from rlstream.environments.registry import (
    available_environments,
    environment_factory,
    make_environment,
    register,
    unregister,
)
from rlstream.environments.replay import NOT_IN_LOG, ReplayEnvironment

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "NOT_IN_LOG",
    "Domain",
    "Environment",
    "EnvironmentFailure",
    "Episode",
    "PythonEnvironment",
    "ReplayEnvironment",
    "Sampler",
    "StepResult",
    "Task",
    "Tools",
    "assistant_message",
    "available_environments",
    "environment_factory",
    "load_domain",
    "make_environment",
    "register",
    "run_episode",
    "run_episode_sync",
    "task_id_of",
    "unregister",
]
