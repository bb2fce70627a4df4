"""Lazy, parallel server startup shared by the whole test session.

Why: starting every server serially costs the sum of their boot times; after collection we
know which tiers the selected tests need and boot those at once in worker threads. A fixture
then only waits for its own server's future.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
import time
from pathlib import Path
from typing import Any

from .cluster import KubeCluster
from .docker import DockerEngine
from .kafka import KafkaServer
from .kafka_secure import SecureKafkaServer
from .kube import KubeServer
from .paths import cache_dir, missing_reason
from .postgres import PostgresServer
from .redis import RedisServer

#: "kafka_secure" is a server, not a tier: its tests carry the kafka marker
SERVER_TIERS = ("kafka", "kafka_secure", "postgres", "redis", "k8s", "docker", "cluster")
_FACTORIES: dict[str, Any] = {
    "kafka": KafkaServer,
    "kafka_secure": SecureKafkaServer,
    "postgres": PostgresServer,
    "redis": RedisServer,
    "k8s": KubeServer,
    "docker": lambda _workdir: DockerEngine(cache_dir()),
    "cluster": KubeCluster,
}


class Servers:
    def __init__(self, rundir: Path) -> None:
        self.rundir = rundir
        self._pool = concurrent.futures.ThreadPoolExecutor(6, thread_name_prefix="rlstream-harness")
        self._futures: dict[str, concurrent.futures.Future[Any]] = {}
        self._objs: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.t0: float | None = None
        self.t_ready: dict[str, float] = {}

    def prestart(self, tiers: set[str]) -> None:
        for t in SERVER_TIERS:
            if t in tiers and missing_reason(t) is None:
                self._submit(t)

    def _submit(self, tier: str) -> concurrent.futures.Future[Any]:
        with self._lock:
            if tier not in self._futures:
                if self.t0 is None:
                    self.t0 = time.monotonic()
                obj = _FACTORIES[tier](self.rundir / tier)
                self._objs[tier] = obj
                self._futures[tier] = self._pool.submit(self._boot, tier, obj)
            return self._futures[tier]

    def _boot(self, tier: str, obj: Any) -> Any:
        obj.start()
        assert self.t0 is not None
        self.t_ready[tier] = time.monotonic() - self.t0
        return obj

    def get(self, tier: str, timeout: float = 300.0) -> Any:
        return self._submit(tier).result(timeout)

    def started(self) -> dict[str, Any]:
        return dict(self._objs)

    def stop_all(self) -> None:
        for tier, fut in list(self._futures.items()):
            # A failed boot still may have left processes behind: stop() below.
            with contextlib.suppress(Exception):
                fut.result(timeout=300)
            with contextlib.suppress(Exception):
                self._objs[tier].stop()
        self._futures.clear()
        self._pool.shutdown(wait=False)

    def summary(self) -> str:
        if not self.t_ready:
            return ""
        order = sorted(self.t_ready, key=self.t_ready.__getitem__)
        parts = ", ".join(f"{t} {self.t_ready[t]:.1f}s" for t in order)
        return f"servers ready (s after first start, in parallel): {parts}"
