"""Curator: scored rollouts -> pending pool -> sealed dataset releases.

The consumer path is cheap (decode, make sure the rollout is stored, mark its agent and
spec dirty). A release loop checks dirty pools against the policy and, under a
single-flight Redis lock, seals a dataset with :mod:`rlstream.curation` (the same code as
``rlstream curate``), records it and marks its rollouts released in one Postgres
transaction (a rollout is never released twice), records lineage, publishes
``DatasetReleased`` and hands the dataset to the launcher. A crash between the Postgres
commit and the publish is repaired on the next loop: recorded-but-unannounced datasets
are re-published from the event stored with them.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Sequence
from typing import Any

from rlstream.curation import CurateOptions
from rlstream.curation.heldout import is_heldout, keys_rule
from rlstream.delivery import Item, Rejected, apply_isolating, decode_all
from rlstream.delivery.idempotency import SeenKeys
from rlstream.delivery.runtime import Runtime
from rlstream.errors import MessageTooLarge
from rlstream.events import (
    DatasetProfile,
    DatasetReleased,
    LineageSummary,
    topics,
)
from rlstream.launch import Launcher
from rlstream.observability import tracing, tracing_batch
from rlstream.observability.metrics import (
    DATASETS_RELEASED,
    GRADIENT_SUPPORT,
    PENDING_ROLLOUTS,
    BoundedLabel,
)
from rlstream.rollout import ScoredRollout
from rlstream.services.curator.policy import pick_groups, pool_stats, should_release
from rlstream.services.curator.settings import CuratorSettings
from rlstream.services.curator.training import CuratorTraining
from rlstream.storage import DatasetRecord, LineageEdge, release_lock_name, rollout_group

log = logging.getLogger("rlstream.services.curator")

Pair = tuple[str, str]  # (agent, reward_spec)
_BUSY = object()


async def _keep_alive(lock: Any) -> None:
    """Extend the single-flight lock while a release runs. Its TTL is short, so a curator
    killed mid-release blocks the next one for seconds, not minutes."""
    while True:
        await asyncio.sleep(lock.ttl_ms / 3000)
        if not await lock.extend():
            log.warning("release lock lost while sealing")
            return


class CuratorHandler:
    def __init__(self, rt: Runtime, settings: CuratorSettings, launcher: Launcher | None) -> None:
        self.rt = rt
        self.settings = settings
        self.launcher = launcher
        self.training = CuratorTraining(rt, settings, launcher)
        self.dirty: set[Pair] = set()
        self._last_check: dict[Pair, float] = {}
        self._local_lock = asyncio.Lock()
        self._announced: set[str] = set()
        allowed = (*settings.metric_agents, *settings.release_overrides)
        self.agent_label = BoundedLabel(allowed, settings.metric_agents_auto_max)
        # per pair: the task key a capped read stopped at, and the pending count that a
        # release which read the whole pool left behind (curation kept none of those)
        self._cursor: dict[Pair, str | None] = {}
        self._left: dict[Pair, int] = {}
        #: the curate spans of rollouts consumed by this process: a release descends from
        #: the newest of its rollouts and links to the others (docs/tracing.md)
        self.traces = tracing_batch.ContextMemory()

    # ---- consumer path -----------------------------------------------------------------

    def decode(self, record: Any) -> ScoredRollout:
        value = record.value or b""
        if len(value) > self.rt.settings.max_message_bytes:
            raise MessageTooLarge(f"{len(value)} bytes")
        return ScoredRollout.model_validate_json(value)

    async def handle(self, records: Sequence[Any]) -> list[Rejected]:
        decoded = decode_all(records, self.decode)
        items = decoded.items
        missing = items
        if self.rt.redis is not None and items:
            flags = await SeenKeys(self.rt.redis, "scored").seen(
                [i.value.rollout_id for i in items]
            )
            missing = [i for i, f in zip(items, flags, strict=True) if not f]

        async def save(batch: list[Item[ScoredRollout]]) -> None:
            await self.rt.store.save_rollouts([i.value for i in batch])

        _, bad = await apply_isolating(missing, save)  # replays into a fresh DB stay correct
        for it in items:
            g = rollout_group(it.value)
            self.dirty.add((g.agent, g.reward_spec))
            self.traces.remember(it.value.rollout_id, it.record)  # no-op when tracing is off
        return decoded.rejected + bad

    # ---- release loop ------------------------------------------------------------------

    async def run_forever(self) -> None:
        interval = self.settings.release_check_interval_s
        while True:
            await asyncio.sleep(min(1.0, interval))
            try:
                await self.republish_unannounced()
                await self.check_all()
                await self.training.launch_unlaunched(self._announced)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("release loop iteration failed; will retry", exc_info=True)

    async def mark_all_pending_dirty(self) -> None:
        rows = await self.rt.store.pool.fetch(
            "SELECT DISTINCT agent, reward_spec FROM rollouts WHERE released_in IS NULL"
        )
        self.dirty |= {(r["agent"], r["reward_spec"]) for r in rows}

    async def check_all(self) -> list[DatasetReleased]:
        now = time.monotonic()
        out = []
        for pair in sorted(self.dirty):
            if now - self._last_check.get(pair, 0.0) < self.settings.release_check_interval_s:
                continue
            self._last_check[pair] = now
            self.dirty.discard(pair)
            try:
                ev = await self.maybe_release(*pair)
            except BaseException:
                self.dirty.add(pair)  # look again next round: nothing is forgotten
                raise
            if ev is _BUSY:
                self.dirty.add(pair)
            elif isinstance(ev, DatasetReleased):
                out.append(ev)
        return out

    async def maybe_release(self, agent: str, reward_spec: str) -> DatasetReleased | object | None:
        """Release if the pool passes the policy; ``_BUSY`` if another worker holds the lock."""
        s = self.settings
        pair = (agent, reward_spec)
        groups = await self.rt.store.group_stats(agent, reward_spec, pending_only=True)
        stats = pool_stats(groups)
        label = self.agent_label(agent)
        if label != BoundedLabel.OTHER:  # a gauge cannot sum agents: "other" has none
            GRADIENT_SUPPORT.labels(label, reward_spec).set(stats.gradient_support)
            PENDING_ROLLOUTS.labels(label, reward_spec).set(stats.rollouts)
        min_rollouts, min_groups, min_support = s.thresholds_for(agent)
        if not should_release(
            stats, min_rollouts=min_rollouts, min_groups=min_groups, min_support=min_support
        ):
            return None
        left = self._left.get(pair)
        if left is not None and left <= stats.rollouts < left + min_rollouts:
            return None  # what the last full read left behind, and too few new ones
        task_keys, cursor = pick_groups(groups, self._cursor.get(pair), s.release_max_rollouts)
        redis = self.rt.redis
        lock = None
        if redis is not None:
            name = release_lock_name(agent, reward_spec)  # an erasure takes it too
            lock = await redis.locks.try_acquire(name, s.release_lock_ttl_ms)
            if lock is None:
                log.info("release already in flight elsewhere", extra={"agent": agent})
                return _BUSY
        keeper = asyncio.create_task(_keep_alive(lock)) if lock is not None else None
        try:
            async with self._local_lock:
                event = await self._release(agent, reward_spec, task_keys)
        finally:
            if keeper is not None:
                keeper.cancel()
            if lock is not None:
                await lock.release()
        self._cursor[pair] = cursor
        if task_keys is None:  # the whole pool was read: wait for min_rollouts new ones
            self._left[pair] = stats.rollouts - (event.profile.rollouts if event else 0)
        else:
            self._left.pop(pair, None)
        return event

    async def _release(
        self, agent: str, reward_spec: str, task_keys: list[str] | None = None
    ) -> DatasetReleased | None:
        pending = await self.rt.store.pending_rollouts(agent, reward_spec, task_keys=task_keys)
        parent, links = self.traces.parent_and_links(r.rollout_id for r in pending)
        attrs = {"rlstream.pending_rollouts": len(pending), "rlstream.reward_spec": reward_spec}
        with tracing.span("release", parent=parent, links=links, attributes=attrs) as span:
            event = await self._seal(agent, reward_spec, pending)
            if span is not None and event is not None:
                span.set_attribute("rlstream.dataset_id", event.dataset_id)
                span.set_attribute("rlstream.rollouts", event.profile.rollouts)
            return event

    async def _seal(
        self, agent: str, reward_spec: str, pending: list[ScoredRollout]
    ) -> DatasetReleased | None:
        from rlstream.services.curator.seal import seal_dataset

        s = self.settings
        held = await self._heldout_keys(agent, reward_spec, pending)
        sealed = await asyncio.to_thread(
            seal_dataset,
            pending,
            s.datasets_path(),
            agent,
            CurateOptions(heldout_share=s.heldout_share),
            keys_rule(held),
        )
        if sealed is None or len(sealed.rollout_ids) < 1:
            log.info("pool passed thresholds but curation kept nothing", extra={"agent": agent})
            return None
        stats = pool_stats(await self.rt.store.group_stats(agent, reward_spec, pending_only=True))
        kept = {r.rollout_id: r for r in pending if r.rollout_id in set(sealed.rollout_ids)}
        ids = sorted(kept)
        event = DatasetReleased(
            dataset_id=sealed.dataset_id,
            agent=agent,
            reward_spec=reward_spec,
            path=str(sealed.path),
            sha256=sealed.sha256,
            files=sealed.files,
            manifest=sealed.manifest,
            profile=DatasetProfile(
                rollouts=len(ids),
                groups=len({kept[i].task_key for i in ids}),
                groups_multi=stats.groups_multi,
                pass_rate=sum(kept[i].passed for i in ids) / len(ids),
                gradient_support=stats.gradient_support,
                gradient_support_unbiased=stats.gradient_support_unbiased,
                method=sealed.method,
            ),
            lineage=LineageSummary(
                rollout_ids_sha256=hashlib.sha256("\n".join(ids).encode()).hexdigest(),
                conversations=len({kept[i].conversation_id for i in ids}),
                task_keys=len({kept[i].task_key for i in ids}),
                sources=tuple(
                    sorted(
                        {
                            kept[i].transcript.source.topic
                            or kept[i].transcript.source.file
                            or "inline"
                            for i in ids
                        }
                    )
                ),
            ),
        )
        record = DatasetRecord(
            dataset_id=event.dataset_id,
            agent=agent,
            reward_spec=reward_spec,
            manifest={"release": event.model_dump(mode="json")},
            path=event.path,
            n_rollouts=len(ids),
        )
        await self.rt.store.release_dataset(record, ids)  # one transaction; never twice
        edges: list[LineageEdge] = []
        for rid in ids:
            r = kept[rid]
            label = rollout_group(r).label()
            edges += [
                LineageEdge(
                    from_kind="dataset", from_id=event.dataset_id, to_kind="group", to_id=label
                ),
                LineageEdge(from_kind="group", from_id=label, to_kind="rollout", to_id=rid),
                LineageEdge(
                    from_kind="rollout",
                    from_id=rid,
                    to_kind="conversation",
                    to_id=r.conversation_id,
                ),
            ]
        await self.rt.store.add_lineage(edges)
        await self.announce(event)
        DATASETS_RELEASED.labels(self.agent_label(agent), reward_spec).inc()
        log.info("dataset released", extra={"dataset_id": event.dataset_id, "rollouts": len(ids)})
        return event

    async def _heldout_keys(
        self, agent: str, reward_spec: str, pending: Sequence[ScoredRollout]
    ) -> set[str]:
        """Hold out (in Postgres, when first seen) the pool's keys the hash picks; return
        every held-out key of the pool, including ones recorded by earlier releases under
        any reward spec of the agent (the split is per agent)."""
        keys = sorted({r.task_key for r in pending})
        share = self.settings.heldout_share
        picked = [k for k in keys if is_heldout(agent, k, share)]
        if picked:
            await self.rt.store.hold_out(agent, reward_spec, picked, share)
        held: set[str] = await self.rt.store.heldout_keys(agent, keys)
        return held

    async def announce(self, event: DatasetReleased) -> None:
        """Publish, remember it as announced, then launch (each step idempotent). A launch
        that fails (API server down, 403) is retried by ``launch_unlaunched``; the
        release is not published again for it."""
        box = self.rt.runner.outbox()
        await box.add(
            self.rt.topic(topics.DATASETS),
            event.dataset_id.encode(),
            event.dump_json(),
            [("x-rlstream-event-id", event.event_id.encode())],
        )
        failures = await box.flush()
        if failures:
            raise failures[0][1]
        if self.rt.redis is not None:
            await self.rt.redis.mark_seen(
                [self.rt.redis.idem_key("dataset-announced", event.dataset_id)]
            )
        self._announced.add(event.dataset_id)
        await self.training.launch(event)

    async def republish_unannounced(self, window_s: int = 86_400) -> int:
        rows = await self.rt.store.pool.fetch(
            "SELECT dataset_id, manifest FROM datasets WHERE created_at > now() - make_interval(secs => $1)",
            float(window_s),
        )
        n = 0
        for row in rows:
            did = row["dataset_id"]
            if did in self._announced:
                continue
            redis = self.rt.redis
            if redis is not None and await redis.is_seen(redis.idem_key("dataset-announced", did)):
                self._announced.add(did)
                continue
            manifest = row["manifest"]
            release = manifest.get("release") if isinstance(manifest, dict) else None
            if release is None:
                self._announced.add(did)  # recorded by someone else (e.g. the CLI)
                continue
            await self.announce(DatasetReleased.model_validate(release))
            n += 1
        return n
