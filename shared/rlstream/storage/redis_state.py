"""Hot state on Redis: idempotency keys, group counters, near-dup index, locks.

Everything here is a cache of Postgres or a coordination aid: losing Redis loses no data.
:func:`rlstream.storage.rebuild.rebuild_from_postgres` restores what matters.

Idempotency and at-least-once: mark a key *after* the durable write (``is_seen`` before,
``mark_seen`` after). ``seen`` claims and checks in one step; use it only where the effect
behind it is itself idempotent, because a crash after the claim skips the retry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from redis.asyncio import Redis
from redis.exceptions import RedisError

from rlstream.errors import ConfigError
from rlstream.rollout import ScoredRollout
from rlstream.storage.locks import Locks
from rlstream.storage.neardup import NearDupIndex
from rlstream.storage.records import GroupKey, GroupStats
from rlstream.storage.redisconnect import redis_client, redis_error

DEFAULT_TTL_S = 7 * 24 * 3600

# One call counts a whole batch. Per rollout i (1-based), KEYS[3i-2..3i] = group hash,
# per-rollout marker, (agent, spec) index set; ARGV[1] = marker TTL, then per rollout
# ARGV[5i-3..5i+1] = passed (0/1), score, agent, reward_spec, task_key.
# Returns, per rollout, n, passes, sum_score after it (as strings).
_BUMP = """
local out = {}
local ttl = ARGV[1]
for i = 1, #KEYS / 3 do
    local g, marker, index = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
    local a = 5 * i - 3
    if redis.call('SET', marker, '1', 'NX', 'EX', ttl) then
        redis.call('HINCRBY', g, 'n', 1)
        redis.call('HINCRBY', g, 'passes', ARGV[a])
        redis.call('HINCRBYFLOAT', g, 'sum_score', ARGV[a + 1])
        redis.call('HSET', g, 'agent', ARGV[a + 2], 'reward_spec', ARGV[a + 3],
                   'task_key', ARGV[a + 4])
        redis.call('SADD', index, g)
    end
    local v = redis.call('HMGET', g, 'n', 'passes', 'sum_score')
    table.insert(out, v[1])
    table.insert(out, v[2])
    table.insert(out, v[3])
end
return out
"""
#: rollouts per script call: bounds how long one call holds Redis's single thread
_BUMP_CHUNK = 500


def _h(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:24]


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisState:
    """All Redis state rlstream keeps, under one key ``namespace``."""

    def __init__(
        self, redis: Redis, *, namespace: str = "rlstream", ttl_s: int = DEFAULT_TTL_S
    ) -> None:
        self.redis = redis
        self.namespace = namespace
        self.ttl_s = ttl_s
        self.locks = Locks(redis, namespace)
        self.neardup = NearDupIndex(redis, namespace)
        self._bump = redis.register_script(_BUMP)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        namespace: str = "rlstream",
        ttl_s: int = DEFAULT_TTL_S,
        cafile: Path | None = None,
    ) -> RedisState:
        """``url``: ``redis://`` or ``rediss://`` (TLS), with ``user:password@`` for an ACL
        user; ``cafile``: the CA a ``rediss://`` server's certificate must chain to."""
        return cls(redis_client(url, cafile), namespace=namespace, ttl_s=ttl_s)

    async def check(self) -> bool:
        """At start: ConfigError (one line naming the setting) when Redis refuses the
        credentials or its certificate; False when it is merely unreachable (readiness
        reports that, the service keeps trying)."""
        try:
            await self.redis.ping()  # type: ignore[misc]
        except (OSError, RedisError) as exc:
            error = redis_error(exc)
            if isinstance(error, ConfigError):
                raise error from exc
            return False
        return True

    async def ping(self) -> bool:
        """True when Redis answers (for readiness probes)."""
        try:
            return bool(await self.redis.ping())  # type: ignore[misc]
        except (OSError, RedisError):
            return False

    async def close(self) -> None:
        await self.redis.aclose()

    # ---- idempotency -------------------------------------------------------------------

    def idem_key(self, kind: str, id: str) -> str:
        """The idempotency key for e.g. ``("conversation", cid)`` or ``("rollout", rid)``."""
        return f"{self.namespace}:idem:{kind}:{id}"

    async def seen(self, key: str, ttl_s: int | None = None) -> bool:
        """Claim ``key``: False the first time (and it is now claimed), True afterwards."""
        claimed = await self.redis.set(key, b"1", nx=True, ex=ttl_s or self.ttl_s)
        return not claimed

    async def is_seen(self, key: str) -> bool:
        return bool(await self.redis.exists(key))

    async def mark_seen(self, keys: Sequence[str], ttl_s: int | None = None) -> int:
        """Mark keys as seen (after their effect is durable); return how many were new."""
        if not keys:
            return 0
        pipe = self.redis.pipeline(transaction=False)
        for key in keys:
            pipe.set(key, b"1", nx=True, ex=ttl_s or self.ttl_s)
        return sum(1 for ok in await pipe.execute() if ok)

    # ---- group counters ----------------------------------------------------------------

    def _group_key(self, key: GroupKey) -> str:
        return f"{self.namespace}:grp:{_h(key.agent, key.reward_spec, key.task_key)}"

    def _index_key(self, agent: str, reward_spec: str) -> str:
        return f"{self.namespace}:grps:{_h(agent, reward_spec)}"

    def _marker_key(self, rollout_id: str) -> str:
        return f"{self.namespace}:cnt:{rollout_id}"

    async def bump_groups(self, rollouts: Sequence[ScoredRollout]) -> list[GroupStats]:
        """Count each rollout in its group, once per rollout id, in O(1) per rollout.

        Call it for every rollout of a processed batch, new or redelivered: a per-rollout
        marker (same TTL as idempotency keys) makes a repeat a no-op. Returns the counters
        after each rollout, in input order.
        """
        out: list[GroupStats] = []
        for start in range(0, len(rollouts), _BUMP_CHUNK):
            out += await self._bump_chunk(rollouts[start : start + _BUMP_CHUNK])
        return out

    async def _bump_chunk(self, rollouts: Sequence[ScoredRollout]) -> list[GroupStats]:
        keys: list[str] = []
        args: list[str | int] = [self.ttl_s]
        groups: list[GroupKey] = []
        cache: dict[tuple[str, str, str], tuple[GroupKey, str, str]] = {}
        for r in rollouts:
            parts = (r.transcript.agent or "", r.reward_spec, r.task_key)
            if parts not in cache:
                g = GroupKey(agent=parts[0], reward_spec=parts[1], task_key=parts[2])
                cache[parts] = (g, self._group_key(g), self._index_key(parts[0], parts[1]))
            g, gkey, ikey = cache[parts]
            groups.append(g)
            keys += [gkey, self._marker_key(r.rollout_id), ikey]
            args += [int(r.passed), repr(r.score), *parts]
        if not groups:
            return []
        raw = await self._bump(keys=keys, args=args)
        return [
            GroupStats(
                key=g,
                n=int(raw[3 * i]),
                passes=int(raw[3 * i + 1]),
                sum_score=float(raw[3 * i + 2]),
            )
            for i, g in enumerate(groups)
        ]

    async def get_group(self, key: GroupKey) -> GroupStats | None:
        raw = await self.redis.hmget(self._group_key(key), ["n", "passes", "sum_score"])  # type: ignore[misc]
        if raw[0] is None:
            return None
        return GroupStats(key=key, n=int(raw[0]), passes=int(raw[1]), sum_score=float(raw[2]))

    async def groups(self, agent: str | None, reward_spec: str) -> list[GroupStats]:
        """Every group of (agent, reward spec) Redis knows, sorted by task key."""
        members = await self.redis.smembers(self._index_key(agent or "", reward_spec))  # type: ignore[misc]
        pipe = self.redis.pipeline(transaction=False)
        for m in sorted(_s(x) for x in members):
            pipe.hgetall(m)
        out: list[GroupStats] = []
        for h in await pipe.execute():
            d = {_s(k): _s(v) for k, v in h.items()}
            if "n" in d:
                key = GroupKey(
                    agent=d["agent"], reward_spec=d["reward_spec"], task_key=d["task_key"]
                )
                out.append(
                    GroupStats(
                        key=key,
                        n=int(d["n"]),
                        passes=int(d["passes"]),
                        sum_score=float(d["sum_score"]),
                    )
                )
        return sorted(out, key=lambda s: s.key.task_key)

    async def set_groups(self, stats: Sequence[GroupStats]) -> None:
        """Overwrite counters with authoritative values (used by the rebuild)."""
        pipe = self.redis.pipeline(transaction=False)
        for s in stats:
            k = self._group_key(s.key)
            pipe.delete(k)
            pipe.hset(
                k,
                mapping={
                    "n": s.n,
                    "passes": s.passes,
                    "sum_score": repr(s.sum_score),
                    **s.key.model_dump(),
                },
            )
            pipe.sadd(self._index_key(s.key.agent, s.key.reward_spec), k)
        await pipe.execute()

    async def mark_counted(self, rollout_ids: Sequence[str], ttl_s: int | None = None) -> None:
        """Set the per-rollout counter markers without counting (rebuild restores them)."""
        await self.mark_seen([self._marker_key(r) for r in rollout_ids], ttl_s)

    async def clear(self, pattern: str = "*") -> int:
        """Delete this namespace's keys matching ``pattern`` (e.g. ``"grp*"``)."""
        deleted = 0
        batch: list[bytes | str] = []
        async for key in self.redis.scan_iter(match=f"{self.namespace}:{pattern}", count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                deleted += await self.redis.delete(*batch)
                batch = []
        if batch:
            deleted += await self.redis.delete(*batch)
        return deleted
