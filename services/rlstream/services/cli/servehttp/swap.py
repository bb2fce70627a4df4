"""Hot-swap of the served model: load the next one off the request path, then swap one reference.

A request reads ``Swapper.current`` once when it starts and uses that ``Served`` (engine and
model id) to its end, so a swap never touches a generation in flight: it finishes on the old
engine, which is freed when the last such request drops it. Swaps run one at a time (a lock)
and the new engine loads on a thread while the old one keeps answering; a failed load leaves
``current`` as it was, counts ``rlstream_serve_adapter_swaps_total{result="failed"}`` and
logs why. Memory holds both models during the load (the price of never pausing).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from rlstream.errors import ConfigError, RlstreamError
from rlstream.services.cli.servehttp import metrics as m
from rlstream.services.cli.servehttp.resolve import local

log = logging.getLogger("rlstream.serve")

E = TypeVar("E")


class AdapterLoadError(RlstreamError):
    """The next model did not load; the previous one keeps serving."""

    code = "adapter_load_failed"

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        #: 422: the adapter is bad (missing, corrupt, wrong base); 500: the server's side
        self.status = status


@dataclass(frozen=True)
class Served(Generic[E]):
    model_id: str
    engine: E
    #: the folder it was loaded from (None: the base model alone / the initial load)
    source: str | None = None
    promotion_id: str | None = None
    since: float = 0.0


@dataclass(frozen=True)
class Swapped:
    model_id: str
    previous: str | None
    load_s: float


def locate(model_path: str | None) -> tuple[Path | None, Path | None]:
    """(full model folder, adapter folder) for a swap's ``model_path``; 422 when it is not one."""
    if model_path is None:
        return None, None
    try:
        found = local(Path(model_path))
    except ConfigError as exc:
        raise AdapterLoadError(str(exc)) from exc
    if found is None:
        raise AdapterLoadError(f"{model_path} is not a folder on the serving machine")
    return found


def _status(exc: BaseException, source: str | None) -> int:
    if isinstance(exc, MemoryError) or "out of memory" in str(exc).lower():
        return 500
    return 422 if source is not None else 500


class Swapper(Generic[E]):
    def __init__(self) -> None:
        self.current: Served[E] | None = None
        self._lock = asyncio.Lock()

    async def swap(
        self,
        model_id: str,
        load: Callable[[], E],
        *,
        source: str | None = None,
        promotion_id: str | None = None,
        initial: bool = False,
    ) -> Swapped:
        """Load with ``load`` on a thread, then make it ``current``; raises AdapterLoadError.

        Asking for what already serves (same id and folder) answers at once (idempotent, so
        a retried deploy is harmless). ``initial`` loads are not counted as swaps."""
        async with self._lock:
            prev = self.current
            old = prev.model_id if prev else None
            if prev is not None and (prev.model_id, prev.source) == (model_id, source):
                m.SWAPS.labels("unchanged").inc()
                return Swapped(model_id, old, 0.0)
            t0 = time.perf_counter()
            try:
                engine = await asyncio.to_thread(load)
            except Exception as exc:
                if not initial:
                    m.SWAPS.labels("failed").inc()
                status = exc.status if isinstance(exc, AdapterLoadError) else _status(exc, source)
                msg = f"{model_id} ({source or 'base model'}) did not load: {exc}"
                log.error("adapter swap failed, still serving %s: %s", old, msg)
                raise AdapterLoadError(msg, status) from exc
            took = time.perf_counter() - t0
            self.current = Served(model_id, engine, source, promotion_id, time.time())
            if not initial:
                m.SWAPS.labels("ok").inc()
                m.SWAP_SECONDS.observe(took)
                log.info("now serving %s (was %s), loaded in %.2f s", model_id, old, took)
            return Swapped(model_id, old, took)
