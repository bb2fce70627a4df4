"""Single-flight locks on Redis: ``SET NX PX`` with a random token.

Release and extend are compare-and-act Lua scripts, so a holder whose lock expired can
never delete or prolong the lock that someone else has taken since.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from redis.asyncio import Redis

from rlstream.storage.errors import LockBusyError


def release_lock_name(agent: str, reward_spec: str) -> str:
    """The curator's single-flight lock of one (agent, reward spec) pool: a release holds
    it while it seals and records, and an erasure of that pool's rollouts takes it too."""
    return "release:" + hashlib.sha256(f"{agent}\x00{reward_spec}".encode()).hexdigest()[:24]


_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""

_EXTEND = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""


class Lock:
    """A held lock. ``release`` and ``extend`` return False once the lock was lost."""

    def __init__(self, redis: Redis, key: str, token: str, ttl_ms: int) -> None:
        self._redis = redis
        self.key = key
        self.token = token
        self.ttl_ms = ttl_ms
        self.lost = False

    async def release(self) -> bool:
        return bool(await self._redis.eval(_RELEASE, 1, self.key, self.token))  # type: ignore[misc]

    async def extend(self, ttl_ms: int | None = None) -> bool:
        ttl = self.ttl_ms if ttl_ms is None else ttl_ms
        return bool(await self._redis.eval(_EXTEND, 1, self.key, self.token, ttl))  # type: ignore[misc]


class Locks:
    def __init__(self, redis: Redis, namespace: str) -> None:
        self._redis = redis
        self._prefix = f"{namespace}:lock:"

    async def try_acquire(
        self, name: str, ttl_ms: int, *, wait_s: float = 0.0, poll_s: float = 0.05
    ) -> Lock | None:
        """Take the lock, waiting up to ``wait_s``; None if someone else still holds it."""
        key = self._prefix + name
        token = secrets.token_hex(16)
        deadline = time.monotonic() + wait_s
        while True:
            if await self._redis.set(key, token, nx=True, px=ttl_ms):
                return Lock(self._redis, key, token, ttl_ms)
            if time.monotonic() >= deadline:
                return None
            await asyncio.sleep(poll_s)

    @asynccontextmanager
    async def hold(
        self, name: str, ttl_ms: int, *, wait_s: float = 0.0, renew: bool = False
    ) -> AsyncIterator[Lock]:
        """``async with locks.hold("release:agent", 30_000): ...``; LockBusyError if busy.

        With ``renew=True`` a background task extends the lock every ``ttl_ms / 3`` while
        the body runs, so long work keeps it; if the lock is lost anyway (a stall longer
        than the TTL) ``lock.lost`` turns True and the body can check it before committing.
        """
        lock = await self.try_acquire(name, ttl_ms, wait_s=wait_s)
        if lock is None:
            raise LockBusyError(f"lock {name!r} is held by another worker")
        renewer = asyncio.create_task(_renew(lock)) if renew else None
        try:
            yield lock
        finally:
            if renewer is not None:
                renewer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewer
            await lock.release()


async def _renew(lock: Lock) -> None:
    while True:
        await asyncio.sleep(lock.ttl_ms / 3000)
        if not await lock.extend():
            lock.lost = True
            return
