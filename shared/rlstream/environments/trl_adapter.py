"""Whole episodes as TRL 1.16 GRPO rollouts: a ``rollout_func`` over the environment protocol.

Why ``rollout_func`` and not ``environment_factory`` (read in trl 1.16.0's
``grpo_trainer.py``): the factory exposes an environment's *public methods* as the tools
(one fixed set per class, where ours come per task from ``reset``), can only answer with
tool results (``replay`` answers a reply with the next user turn), parses calls with a
response schema TRL knows only for some templates (SmolLM2's ChatML with fenced-JSON calls
is not one: ``add_response_schema`` raises "Unrecognized chat template"), and runs tools
without a deadline. ``rollout_func`` hands us the prompts and the trainer; we play each
episode with :func:`~rlstream.environments.episode.run_episode` (deadlines and checks
included) and return the token ids TRL trains on:

* ``completion_ids`` = the model's turns and the environment's answers, concatenated;
  ``env_mask`` is 1 on the model's tokens and 0 on the environment's, so only the model's
  tokens carry the loss;
* ``env_reward`` (forwarded to :func:`environment_reward`): the episode's reward, 0.0 for
  an environment error (a graded failure), None (NaN to TRL: left out of the group
  baseline) for an off-log or ungraded episode.

TRL hands the prompt column's messages only, so each task is found by its opening
messages (:func:`prompt_key`); two tasks with the same opening are refused up front.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from rlstream.environments.base import Environment, EnvironmentFailure, Task, Tools
from rlstream.environments.episode import Episode, assistant_message, run_episode_sync
from rlstream.environments.render import Render, feedback_text, template_render
from rlstream.errors import ConfigError
from rlstream.transcript import Message


def prompt_key(messages: Sequence[Mapping[str, Any]]) -> str:
    """A task's opening as a lookup key: roles and texts only (Arrow fills other fields)."""
    return orjson.dumps(
        [[str(m.get("role")), str(m.get("content") or "")] for m in messages]
    ).decode()


@dataclass(slots=True)
class EpisodeStats:
    """What the rollouts did, for metrics.json: episodes by status, successes, errors."""

    episodes: int = 0
    successes: int = 0
    status: Counter[str] = field(default_factory=Counter)
    last_error: str | None = None
    turns: int = 0

    def add(self, ep: Episode) -> None:
        self.episodes += 1
        self.successes += int(ep.success)
        self.status[ep.status] += 1
        self.turns += ep.turns
        if ep.error:
            self.last_error = ep.error

    def summary(self) -> dict[str, Any]:
        return {
            "episodes": self.episodes,
            "successes": self.successes,
            "status": dict(self.status),
            "mean_turns": round(self.turns / self.episodes, 3) if self.episodes else 0.0,
            "last_error": self.last_error,
        }


class _Trace:
    """One episode's token ids: the prompt, then model (mask 1) and environment (mask 0)."""

    def __init__(self) -> None:
        self.prompt: list[int] = []
        self.completion: list[int] = []
        self.mask: list[int] = []
        self.seen = 0  # messages already turned into tokens


class EpisodeRollout:
    """TRL's ``rollout_func(prompts, trainer) -> dict``: one episode per prompt entry (the
    sampler has already repeated each prompt ``num_generations`` times)."""

    def __init__(
        self,
        factory: Callable[[], Environment],
        tasks: Sequence[Task],
        openings: Sequence[Sequence[Mapping[str, Any]]],
        *,
        max_turns: int,
        turn_tokens: int,
        timeout_s: float,
    ) -> None:
        self.factory = factory
        self.max_turns, self.turn_tokens, self.timeout_s = max_turns, turn_tokens, timeout_s
        self.tasks: dict[str, Task] = {}
        for task, opening in zip(tasks, openings, strict=True):
            key = prompt_key(opening)
            if key in self.tasks and self.tasks[key] != task:
                raise ConfigError(
                    "two environment tasks open with the same messages; the trainer routes "
                    "episodes by their opening, so make them differ"
                )
            self.tasks[key] = task
        self.stats = EpisodeStats()

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        tok = trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        budget = int(trainer.max_completion_length)
        gen = copy.deepcopy(trainer.generation_config)
        render = template_render(tok)
        eos = str(tok.eos_token or "")
        out: dict[str, list[Any]] = {
            k: [] for k in ("prompt_ids", "completion_ids", "env_mask", "env_reward", "env_status")
        }
        for prompt in prompts:
            task = self.tasks.get(prompt_key(prompt))
            if task is None:
                raise ConfigError("a GRPO prompt matches no environment task (dataset changed?)")
            trace = _Trace()
            sampler = self._sampler(trace, tok, model, gen, render, eos, budget)
            ep = run_episode_sync(
                _made(self.factory),
                task,
                sampler,
                max_turns=self.max_turns,
                timeout_s=self.timeout_s,
            )
            self.stats.add(ep)
            if not trace.completion:  # reset failed: nothing sampled; one EOS, no loss on it
                if not trace.prompt:  # the dataset's opening, as the hook received it
                    text = render([dict(m) for m in prompt], True)
                    trace.prompt = list(tok.encode(text, add_special_tokens=False))
                trace.completion, trace.mask = [int(tok.eos_token_id)], [0]
            out["prompt_ids"].append(trace.prompt)
            out["completion_ids"].append(trace.completion)
            out["env_mask"].append(trace.mask)
            out["env_reward"].append(0.0 if ep.status == "error" else ep.reward)
            out["env_status"].append(ep.status)
        return {**out, "logprobs": None}

    def _sampler(
        self, trace: _Trace, tok: Any, model: Any, gen: Any, render: Render, eos: str, budget: int
    ) -> Callable[[list[Message], Tools], Any]:
        from rlstream.environments.render import message_dict

        async def sample(messages: list[Message], tools: Tools) -> Message | None:
            if not trace.prompt:
                text = render([message_dict(m) for m in messages], True)
                trace.prompt = list(tok.encode(text, add_special_tokens=False))
            else:
                suffix = feedback_text(render, eos, messages[trace.seen :])
                ids = list(tok.encode(suffix, add_special_tokens=False))
                if len(trace.completion) + len(ids) >= budget:
                    return None
                trace.completion += ids
                trace.mask += [0] * len(ids)
            room = min(self.turn_tokens, budget - len(trace.completion))
            if room <= 0:
                return None
            new = _generate(model, gen, trace.prompt + trace.completion, room, tok.eos_token_id)
            trace.completion += new
            trace.mask += [1] * len(new)
            trace.seen = len(messages) + 1
            return assistant_message(tok.decode(new, skip_special_tokens=True))

        return sample


class _Unmade:
    """Stands in for an environment whose factory raised: its reset reports why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def reset(self, task: Task) -> Any:
        raise EnvironmentFailure(f"the environment could not be made: {self.reason}")

    def step(self, message: Message) -> Any:
        raise EnvironmentFailure(self.reason)


def _made(factory: Callable[[], Environment]) -> Any:
    try:
        return factory()
    except Exception as exc:  # a flaky constructor fails its episode, not the run
        return _Unmade(f"{type(exc).__name__}: {exc}"[:300])


def _generate(model: Any, gen: Any, ids: list[int], room: int, eos_id: int) -> list[int]:
    """One sampled turn, cut after its first end-of-turn token."""
    import torch

    gen.max_new_tokens = room
    x = torch.tensor([ids], device=model.device)
    with torch.no_grad():
        y = model.generate(input_ids=x, attention_mask=torch.ones_like(x), generation_config=gen)
    new: list[int] = y[0, x.shape[1] :].tolist()
    if eos_id in new:
        new = new[: new.index(eos_id) + 1]
    return new


def environment_reward(
    prompts: Sequence[Any], completions: Sequence[Any], env_reward: Sequence[float | None], **_: Any
) -> list[float | None]:
    """The GRPO reward function of environment runs: the episode's own reward."""
    return list(env_reward)


environment_reward.__name__ = "environment"
