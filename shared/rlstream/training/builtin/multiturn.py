"""Multi-turn GRPO on the builtin backend: grpo.jsonl rows as environment tasks.

With ``TrainConfig.environment`` set, each row is one task for that environment: its
``task`` object, else its ``label`` parsed as a JSON object. Every task is reset once here
(under the deadline) to get its opening messages, the prompt column TRL samples from; a
task whose reset fails is skipped and counted, and a run with no task left stops before
the model loads. Rollouts are whole episodes
(:class:`rlstream.environments.trl_adapter.EpisodeRollout`); the reward is the episode's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from rlstream.environments import Environment, EnvironmentFailure, environment_factory
from rlstream.environments.episode import opening
from rlstream.environments.render import message_dict
from rlstream.environments.trl_adapter import EpisodeRollout
from rlstream.errors import ConfigError
from rlstream.training.chat import normalise_message
from rlstream.training.config import TrainConfig
from rlstream.transcript import Message


def task_of(row: dict[str, Any]) -> dict[str, Any] | None:
    """A row's environment task: ``task``, else the label as a JSON object; a curated row's
    ``task_key`` fills in a missing one (what ``replay`` finds its logs by)."""
    task = row.get("task")
    if not isinstance(task, dict):
        task = row.get("label")
        if isinstance(task, str):
            try:
                task = orjson.loads(task)
            except orjson.JSONDecodeError:
                return None
        if not isinstance(task, dict):
            return None
    if "task_key" not in task and isinstance(row.get("task_key"), str):
        task = {**task, "task_key": row["task_key"]}
    return task


def task_openings(
    config: TrainConfig, rows: Sequence[dict[str, Any]]
) -> tuple[Callable[[], Environment], list[tuple[dict[str, Any], list[Message]]], dict[str, int]]:
    """(the environment factory, each usable row's task with its opening messages, skipped
    rows by reason): every task reset once, under the deadline. Both backends build their
    prompts from it."""
    if config.environment is None:
        raise ConfigError("multi-turn training needs TrainConfig.environment")
    factory = environment_factory(config.environment, **config.environment_options)
    out: list[tuple[dict[str, Any], list[Message]]] = []
    skipped: dict[str, int] = {}
    for row in rows:
        task = task_of(row)
        if task is None:
            reason = "no environment task (task or JSON-object label)"
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        try:
            msgs, _ = asyncio.run(opening(factory(), task, config.env_timeout_s))
        except EnvironmentFailure as exc:
            reason = f"reset failed: {exc}"[:200]
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        out.append((task, list(msgs)))
    return factory, out, skipped


def environment_rows(
    config: TrainConfig, rows: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], EpisodeRollout, dict[str, int]]:
    """(TRL prompt rows, the rollout function, skipped rows by reason)."""
    factory, opened, skipped = task_openings(config, rows)
    if not opened:
        raise ConfigError(f"no environment task to train on: {skipped or 'no rows'}")
    tasks = [task for task, _ in opened]
    openings = [[normalise_message(message_dict(m)) for m in msgs] for _, msgs in opened]
    rollout = EpisodeRollout(
        factory,
        tasks,
        openings,
        max_turns=config.max_turns,
        turn_tokens=config.max_new_tokens,
        timeout_s=config.env_timeout_s,
    )
    return [{"prompt": o} for o in openings], rollout, skipped
