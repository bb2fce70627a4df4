"""Services on Postgres and Redis over TLS with password users (what RDS / Cloud SQL /
ElastiCache look like): ingest and grader connect with sslmode=verify-full and rediss://,
their connections are TLS on the server side, and a wrong Redis password stops a service
at start with the one line that names RLSTREAM_REDIS_URL."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from helpers import count, scored_ids

from rlstream.events import topics
from rlstream.storage import RedisState
from rlstream_testkit.stack import Stack, conversation, encode, produce, wait_for_count

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]


def _stack(kafka: Any, postgres_tls: Any, redis_url: str, cafile: Path, tmp: Path) -> Stack:
    st = Stack(
        kafka.bootstrap,
        postgres_tls.create_database(),
        redis_url,
        tmp,
        env={"RLSTREAM_REDIS_SSL_CAFILE": str(cafile)},
    )
    st.create_topics()
    return st


def test_the_chain_runs_over_tls_databases(
    kafka: Any, postgres_tls: Any, redis_tls: Any, tmp_path: Path
) -> None:
    st = _stack(kafka, postgres_tls, redis_tls.url, redis_tls.cafile, tmp_path)
    try:
        st.start("ingest", "grader")
        convs = [conversation(f"c{i}", f"task{i % 3}", resolved=i % 2 == 0) for i in range(6)]
        asyncio.run(produce(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), encode(convs)))
        scored = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.SCORED), 6, timeout=90))
        assert len(set(scored_ids(scored))) == 6
        assert count(st.dsn, "SELECT count(*) FROM transcripts") == 6
        # every connection the services hold to their database is TLS
        database = urlsplit(st.dsn).path.lstrip("/")
        ssl_sql = (
            "SELECT count(*) FILTER (WHERE s.ssl), count(*) FROM pg_stat_activity a"
            " JOIN pg_stat_ssl s USING (pid) WHERE a.datname = $1 AND a.pid <> pg_backend_pid()"
        )
        tls, total = asyncio.run(_fetch_row(postgres_tls, ssl_sql, database))
        assert total > 0 and tls == total
        # the grader's idempotency keys are in the TLS Redis, under the stack's namespace
        assert asyncio.run(_keys(redis_tls, st.prefix.rstrip(".") + ":idem:*")) >= 6
    finally:
        st.stop_all()


def test_a_wrong_redis_password_stops_the_service_with_one_line(
    kafka: Any, postgres_tls: Any, redis_tls: Any, tmp_path: Path
) -> None:
    st = _stack(kafka, postgres_tls, redis_tls.url_for("wrong"), redis_tls.cafile, tmp_path)
    proc = st.service("grader")
    try:
        proc.start()
        deadline = time.monotonic() + 90
        while proc.alive() and time.monotonic() < deadline:
            time.sleep(0.3)
        assert not proc.alive(), "the service kept running with refused credentials"
        assert proc.proc is not None and proc.proc.returncode == 2
        log = proc.tail(200)
        assert "Traceback" not in log
        [line] = [x for x in log.splitlines() if "refused" in x]
        assert "redis refused the user/password in RLSTREAM_REDIS_URL" in line
        assert "rediss://" not in line  # the URL (with its password) is not logged
    finally:
        st.stop_all()


async def _fetch_row(server: Any, sql: str, *args: Any) -> tuple[int, int]:
    import asyncpg

    conn = await asyncpg.connect(server.admin_dsn())
    try:
        row = await conn.fetchrow(sql, *args)
    finally:
        await conn.close()
    return int(row[0]), int(row[1])


async def _keys(server: Any, pattern: str) -> int:
    state = RedisState.from_url(server.url, cafile=server.cafile)
    try:
        return len([k async for k in state.redis.scan_iter(match=pattern)])
    finally:
        await state.close()
