"""Grader: transcripts -> scored rollouts, with the per-agent reward spec.

Thin: the rewards and their combination are :mod:`rlstream.grading` (``grade_many`` so a
group-aware reward sees the batch's passing peers); persistence is the Store; the commit
discipline is :mod:`rlstream.delivery`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlstream.curation.turn_refs import with_turn_scores
from rlstream.delivery import (
    Action,
    Disposition,
    Item,
    Publication,
    Rejected,
    decode_all,
    publish_once,
)
from rlstream.delivery.idempotency import SeenKeys
from rlstream.delivery.runtime import Runtime
from rlstream.delivery.versions import first_wins, transcript_version
from rlstream.errors import ConfigError, MessageTooLarge
from rlstream.events import topics
from rlstream.grading import GradeFailure, RewardSpec, SpecResolver, grade_many
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Transcript


def scored_json(rollout: ScoredRollout, transcript_json: bytes | None) -> bytes:
    """The ScoredEvent wire form, reusing the transcript's bytes as consumed.

    The transcript is most of the event and arrived as JSON that validated as a
    Transcript, and grading passes it through untouched, so serialising it again would
    only re-make the bytes we consumed (cost in bench/README.md). Same JSON value; the
    ``transcript`` member comes first.
    """
    if not transcript_json:
        return rollout.model_dump_json().encode()
    rest = rollout.model_dump_json(exclude=_NO_TRANSCRIPT).encode()
    return b'{"transcript":' + transcript_json + b"," + rest[1:]


_NO_TRANSCRIPT = {"transcript"}


class GraderHandler:
    def __init__(self, rt: Runtime, specs: SpecResolver) -> None:
        self.rt = rt
        self.specs = specs
        self._seen: SeenKeys | None = None

    def _seen_keys(self) -> SeenKeys | None:
        if self._seen is None and self.rt.redis is not None:
            self._seen = SeenKeys(self.rt.redis, "scored")
        return self._seen

    def decode(self, record: Any) -> Transcript:
        value = record.value or b""
        if len(value) > self.rt.settings.max_message_bytes:
            raise MessageTooLarge(f"{len(value)} bytes")
        return Transcript.load_json(value)

    async def handle(self, records: Sequence[Any]) -> list[Rejected]:
        decoded = decode_all(records, self.decode)
        # one version per conversation in a batch: repeats are not graded twice
        items, rejected = first_wins(
            decoded.items, lambda t: t.conversation_id, transcript_version, self.rt.service
        )
        rejected += decoded.rejected
        by_spec: dict[str, tuple[RewardSpec, list[Item[Transcript]]]] = {}
        for it in items:
            try:
                spec = self.specs.for_agent(it.value.agent)
            except ConfigError as exc:  # this agent has no rewards: the record, not the world
                verdict = Disposition(Action.DLQ, "no_reward_spec", str(exc))
                rejected.append(Rejected(it.record, verdict, exc))
                continue
            by_spec.setdefault(spec.spec_id, (spec, []))[1].append(it)
        graded: list[tuple[Item[Transcript], ScoredRollout]] = []
        for spec, items in by_spec.values():
            results = grade_many([i.value for i in items], spec)
            for it, res in zip(items, results, strict=True):
                if isinstance(res, GradeFailure):
                    verdict = Disposition(Action.DLQ, res.code, res.reason)
                    rejected.append(Rejected(it.record, verdict, None))
                else:
                    graded.append((it, res))
        # per-turn scores against the passing peers of the same task in this batch
        turned = with_turn_scores([res for _, res in graded])
        scored = [Item(it.record, res) for (it, _), res in zip(graded, turned, strict=True)]
        # a replaced transcript's bytes are not the consumed record's: send it in full
        fresh = {
            id(item) for item, (it, _) in zip(scored, graded, strict=True)
            if item.value.transcript is not it.value
        }  # fmt: skip
        return rejected + await self.publish(scored, fresh)

    async def publish(
        self, items: list[Item[ScoredRollout]], fresh: set[int] | None = None
    ) -> list[Rejected]:
        """Persist (idempotent), publish, then remember as seen (:mod:`rlstream.delivery.publish`).
        ``fresh``: ids of items whose transcript is not the consumed record's (sent in full)."""
        rt = self.rt

        def value(it: Item[ScoredRollout]) -> bytes:
            raw = None if fresh and id(it) in fresh else it.record.value
            return scored_json(it.value, raw)

        new: set[str] = set()

        async def save(batch: list[Item[ScoredRollout]]) -> None:
            new.update(await rt.store.save_rollouts([i.value for i in batch]))

        async def unless_erased(
            ok: list[Item[ScoredRollout]], _seen: object, _bad: object
        ) -> list[Item[ScoredRollout]]:
            """An erased conversation is never stored again, so never published again."""
            old = [i.value.conversation_id for i in ok if i.value.rollout_id not in new]
            erased = await rt.store.erased_among(old) if old else set()
            return [i for i in ok if i.value.conversation_id not in erased]

        async def stored(ids: list[str]) -> set[str]:  # replayed inputs the seen keys know
            return set(await rt.store.stored_ids("rollouts", ids))

        pub = Publication(rt.topic(topics.SCORED), _rollout_id, _task_key, value, stored)
        return await publish_once(
            items, pub, save, rt.runner.outbox, self._seen_keys(), unless_erased
        )


def _rollout_id(r: ScoredRollout) -> str:
    return r.rollout_id


def _task_key(r: ScoredRollout) -> bytes:
    return r.task_key.encode()
