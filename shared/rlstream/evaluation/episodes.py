"""The environment form of evaluation: each held-out task played as whole episodes.

Instead of grading one generated turn against a reference, the model plays the task in an
environment (:mod:`rlstream.environments`): it answers, the environment replies with tool
results or the user's next turn, until the episode is done or ``max_turns`` is spent. The
environment's reward is the sample's score and task success (reward >= 1.0) is ``passed``,
so pass@1, pass@k and the paired gate read exactly as in the next-action form.

* **Batched turns.** All of one model's episodes advance together: once every live
  episode waits for the model, their conversations go to the sampler as one batch (one
  ``generate`` call per round), so an evaluation costs about ``max_turns`` batched calls,
  not one call per episode turn.
* **Ungradeable is not failed.** An off-log episode (``replay`` left the logs) or a
  truncated one the environment cannot grade is ``graded=False`` with its status as the
  reason: the gate counts it against ``max_ungraded_share`` instead of as a loss.
* **A hostile environment** (raises, hangs past ``timeout_s``, returns garbage) is a graded
  failure with the reason (``environment_failure: ...``); the evaluation goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import orjson

from rlstream.environments import environment_factory
from rlstream.environments.episode import Episode, assistant_message, run_episode
from rlstream.environments.render import message_dict
from rlstream.errors import ConfigError
from rlstream.evaluation.models import Decoding, EnvironmentSpec, Sample
from rlstream.evaluation.prompts import HeldoutPrompt
from rlstream.evaluation.sampler import Advance, Generation, Sampler
from rlstream.transcript import Message

_POLL_S = 0.002


def environment_spec(
    name: str, options: Sequence[str] = (), max_turns: int = 8, timeout_s: float = 30.0
) -> EnvironmentSpec:
    """An :class:`EnvironmentSpec` from command-line ``KEY=VALUE`` options (a value that
    parses as JSON is kept typed: ``max_calls=3`` is an int, ``logs=a.jsonl`` a string)."""
    parsed: dict[str, Any] = {}
    for item in options:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"environment option {item!r}: expected KEY=VALUE")
        try:
            parsed[key.strip()] = orjson.loads(value)
        except orjson.JSONDecodeError:
            parsed[key.strip()] = value
    return EnvironmentSpec(name=name, options=parsed, max_turns=max_turns, timeout_s=timeout_s)


def one_per_task(prompts: Sequence[HeldoutPrompt]) -> list[HeldoutPrompt]:
    """The first prompt of each task key, in file order. A turn-level held-out file holds
    several next-action prompts per task; played as episodes they are the same task, and
    the gate's unit (a task) must be counted once."""
    seen: set[str] = set()
    out: list[HeldoutPrompt] = []
    for p in prompts:
        if p.task_key not in seen:
            seen.add(p.task_key)
            out.append(p)
    return out


def task_for(p: HeldoutPrompt) -> dict[str, Any]:
    """The environment task of a held-out prompt: its row's ``task`` object (a ``python``
    domain's instruction and ground-truth actions), with the task key always set (what
    ``replay`` looks the logged trajectories up by)."""
    return {**(p.task or {}), "task_key": p.task_key}


class _Batcher:
    """The episodes' policy: queues each request, answered a round at a time."""

    def __init__(self, sampler: Sampler, decoding: Decoding) -> None:
        self.sampler = sampler
        self.decoding = decoding.model_copy(update={"k": 1})
        self.waiting: list[tuple[list[Message], asyncio.Future[Generation]]] = []
        self.rounds = 0
        self.tokens: dict[int, list[Generation]] = {}

    async def ask(self, key: int, messages: list[Message]) -> Message:
        fut: asyncio.Future[Generation] = asyncio.get_running_loop().create_future()
        self.waiting.append((messages, fut))
        gen = await fut
        self.tokens.setdefault(key, []).append(gen)
        return assistant_message(gen.text)

    def answer_round(self) -> None:
        batch, self.waiting = self.waiting, []
        decoding = self.decoding.model_copy(update={"seed": self.decoding.seed + self.rounds})
        self.rounds += 1
        gens = self.sampler.generate(
            [[message_dict(m) for m in msgs] for msgs, _ in batch], decoding
        )
        for (_, fut), out in zip(batch, gens, strict=True):
            fut.set_result(out[0])


def _sample(episode: Episode, gens: Sequence[Generation]) -> Sample:
    said = [m for m in episode.messages if m.role == "assistant"]
    text = "\n".join(str(m.extra.get("raw") or m.content or "") for m in said)
    graded = episode.reward is not None or episode.status == "error"
    reason = episode.error if episode.status == "error" else None
    if not graded:
        reason = f"episode {episode.status}: the environment cannot grade it"
    elif reason is not None:
        reason = f"environment_failure: {reason}"
    return Sample(
        text=text[-2000:],
        tokens=sum(g.tokens for g in gens),
        finished=episode.status in ("done", "error", "off_log"),
        score=float(episode.reward or 0.0),
        passed=episode.success,
        tool_error=any(m.role == "tool" and m.is_error for m in episode.messages),
        attempted_call=any(m.tool_calls for m in said),
        graded=graded,
        reason=reason,
    )


async def _play(
    spec: EnvironmentSpec,
    prompts: Sequence[HeldoutPrompt],
    sampler: Sampler,
    decoding: Decoding,
    advance: Advance | None,
) -> list[tuple[Sample, ...]]:
    make = environment_factory(spec.name, **spec.options)
    batcher = _Batcher(sampler, decoding)
    n = decoding.samples
    jobs: list[asyncio.Task[Episode]] = []
    for i, p in enumerate(prompts):
        for j in range(n):
            key = i * n + j

            async def policy(msgs: list[Message], _tools: Any, key: int = key) -> Message:
                return await batcher.ask(key, msgs)

            episode = run_episode(
                make(), task_for(p), policy, max_turns=spec.max_turns, timeout_s=spec.timeout_s
            )
            jobs.append(asyncio.ensure_future(episode))
    reported = 0
    live = set(jobs)
    while live:
        _, live = await asyncio.wait(live, timeout=_POLL_S)
        if live and len(batcher.waiting) == len(live):  # everyone waits for the model
            batcher.answer_round()
        finished = sum(
            all(t.done() for t in jobs[i * n : (i + 1) * n]) for i in range(len(prompts))
        )
        if advance is not None and finished > reported:
            advance(finished - reported)
            reported = finished
    return [
        tuple(
            _sample(jobs[i * n + j].result(), batcher.tokens.get(i * n + j, [])) for j in range(n)
        )
        for i in range(len(prompts))
    ]


def play_heldout(
    spec: EnvironmentSpec,
    prompts: Sequence[HeldoutPrompt],
    sampler: Sampler,
    decoding: Decoding,
    advance: Advance | None = None,
) -> list[tuple[Sample, ...]]:
    """``decoding.samples`` episodes per held-out prompt, played by ``sampler``'s model;
    one tuple of graded samples per prompt, in prompt order."""
    return asyncio.run(_play(spec, prompts, sampler, decoding, advance))
