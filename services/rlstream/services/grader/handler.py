"""Grader: transcripts -> scored rollouts, with the per-agent reward spec.

Thin: the rewards and their combination are :mod:`rlstream.grading` (``grade_many`` so a
group-aware reward sees the batch's passing peers); persistence is the Store; the commit
discipline is :mod:`rlstream.delivery`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlstream.delivery import (
    Action,
    Disposition,
    Item,
    Rejected,
    apply_isolating,
    decode_all,
    reject_or_retry,
)
from rlstream.delivery.idempotency import SeenKeys
from rlstream.delivery.runtime import Runtime
from rlstream.errors import ConfigError, MessageTooLarge
from rlstream.events import topics
from rlstream.grading import GradeFailure, RewardSpec, grade_many
from rlstream.rewards.scored import ScoredRollout
from rlstream.transcript import Transcript


class SpecResolver:
    """agent -> RewardSpec, built once per agent (reward construction is not free)."""

    def __init__(self, config: Any | None, default_spec: str) -> None:
        self.config = config
        self.default_spec = default_spec
        self._cache: dict[str | None, RewardSpec] = {}

    def for_agent(self, agent: str | None) -> RewardSpec:
        spec = self._cache.get(agent)
        if spec is None:
            if self.config is not None:
                spec = RewardSpec.for_agent(self.config, agent)
            else:
                spec = RewardSpec.parse(self.default_spec)
            self._cache[agent] = spec
        return spec


class GraderHandler:
    def __init__(self, rt: Runtime, specs: SpecResolver) -> None:
        self.rt = rt
        self.specs = specs

    def decode(self, record: Any) -> Transcript:
        value = record.value or b""
        if len(value) > self.rt.settings.max_message_bytes:
            raise MessageTooLarge(f"{len(value)} bytes")
        return Transcript.load_json(value)

    async def handle(self, records: Sequence[Any]) -> list[Rejected]:
        decoded = decode_all(records, self.decode)
        rejected = decoded.rejected
        by_spec: dict[str, tuple[RewardSpec, list[Item[Transcript]]]] = {}
        for it in decoded.items:
            try:
                spec = self.specs.for_agent(it.value.agent)
            except ConfigError as exc:  # this agent has no rewards: the record, not the world
                verdict = Disposition(Action.DLQ, "no_reward_spec", str(exc))
                rejected.append(Rejected(it.record, verdict, exc))
                continue
            by_spec.setdefault(spec.spec_id, (spec, []))[1].append(it)
        scored: list[Item[ScoredRollout]] = []
        for spec, items in by_spec.values():
            results = grade_many([i.value for i in items], spec)
            for it, res in zip(items, results, strict=True):
                if isinstance(res, GradeFailure):
                    verdict = Disposition(Action.DLQ, res.code, res.reason)
                    rejected.append(Rejected(it.record, verdict, None))
                else:
                    scored.append(Item(it.record, res))
        return rejected + await self.publish(scored)

    async def publish(self, items: list[Item[ScoredRollout]]) -> list[Rejected]:
        rt = self.rt
        seen_keys = SeenKeys(rt.redis, "scored") if rt.redis is not None else None
        if seen_keys is not None and items:
            flags = await seen_keys.seen([i.value.rollout_id for i in items])
            items = [i for i, f in zip(items, flags, strict=True) if not f]
        if not items:
            return []

        async def save(batch: list[Item[ScoredRollout]]) -> None:
            await rt.store.save_rollouts([i.value for i in batch])

        ok, bad = await apply_isolating(items, save)
        box = rt.runner.outbox()
        for it in ok:
            r = it.value
            await box.add(
                self.rt.topic(topics.SCORED),
                r.task_key.encode(),
                r.model_dump_json().encode(),
                ref=it,
            )
        failed = {id(ref): exc for ref, exc in await box.flush()}
        bad += [reject_or_retry(it.record, failed[id(it)]) for it in ok if id(it) in failed]
        if seen_keys is not None:
            await seen_keys.mark([it.value.rollout_id for it in ok if id(it) not in failed])
        return bad
