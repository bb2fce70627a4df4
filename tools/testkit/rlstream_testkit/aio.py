"""Run a coroutine to completion from sync code, even inside a running event loop.

Why: fixtures and helpers such as ``kafka.create_topics`` are sync but are called from async
tests whose loop is already running; a private loop in a worker thread avoids re-entrancy.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def run_sync(fn: Callable[[], Awaitable[T]], timeout: float = 60.0) -> T:
    async def main() -> T:
        return await asyncio.wait_for(fn(), timeout)

    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        return ex.submit(asyncio.run, main()).result()
