"""One set of limits checked once at ingest; one version per conversation id, the first,
everywhere (issue 12, item 7)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson
import pytest
from helpers import count, wait_until
from test_poison import send

from rlstream.events import topics
from rlstream_testkit.stack import conversation, read_topic, wait_for_count

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]


def _nested(depth: int) -> Any:
    v: Any = 1
    for _ in range(depth):
        v = {"a": v}
    return v


def _codes(st: Any, topic: str) -> list[str]:
    recs = asyncio.run(read_topic(st.bootstrap, st.topic(topics.dlq(topic))))
    return sorted(json.loads(r.value)["error_code"] for r in recs)


def test_limits_are_checked_once_at_ingest(make_stack) -> None:
    st = make_stack()
    st.start("ingest", "grader")
    deep = conversation("deep", "t", True) | {"metadata": {"task_id": "t", "x": _nested(200)}}
    many = conversation("many", "t", True)
    many["messages"] = [{"role": "user", "content": "x"}] * 25_000  # ~0.75 MB raw
    ok = conversation("fine", "t", True)
    recs = [(b"deep", orjson.dumps(deep), []), (b"many", orjson.dumps(many), [])]
    recs.append((b"fine", orjson.dumps(ok), []))
    assert len(recs[1][1]) < 1_000_000
    asyncio.run(send(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), recs))
    assert wait_until(lambda: count(st.dsn, "SELECT count(*) FROM rollouts") >= 1, 90)
    assert wait_until(lambda: len(_codes(st, topics.CONVERSATIONS_RAW)) >= 2, 30)
    assert _codes(st, topics.CONVERSATIONS_RAW) == ["message_too_large", "nesting_too_deep"]
    ids = {r[0] for r in _rows(st.dsn, "SELECT conversation_id FROM transcripts")}
    assert ids == {"fine"}  # nothing stored that a later stage refuses
    assert _codes(st, topics.TRANSCRIPTS) == []


def _rows(dsn: str, sql: str) -> list[Any]:
    from helpers import pg

    return asyncio.run(pg(dsn, sql))


def _flush_namespace(redis_url: str, ns: str) -> int:
    import redis

    r = redis.Redis.from_url(redis_url)
    keys = list(r.scan_iter(f"{ns}*"))
    if keys:
        r.delete(*keys)
    r.close()
    return len(keys)


def test_first_version_wins_everywhere_and_conflicts_are_reported(make_stack, redis_url) -> None:
    st = make_stack()
    ingest, _ = st.start("ingest", "grader")
    raw = st.topic(topics.CONVERSATIONS_RAW)
    a = orjson.dumps(conversation("dup", "t", True))
    b = orjson.dumps(conversation("dup", "t", False))
    others = [
        (f"o{i}".encode(), orjson.dumps(conversation(f"o{i}", "t", True)), []) for i in range(5)
    ]
    # one batch: the first version, 6 identical repeats, a conflicting one
    asyncio.run(send(st.bootstrap, raw, [(b"dup", a, [])] * 7 + [(b"dup", b, [])] + others))
    scored = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.SCORED), 6, timeout=90))
    dup = [json.loads(r.value) for r in scored if b'"dup"' in r.value]
    assert len(dup) == 1 and dup[0]["score"] == 1.0
    transcripts = asyncio.run(read_topic(st.bootstrap, st.topic(topics.TRANSCRIPTS)))
    assert sum(b'"dup"' in r.value for r in transcripts) == 1  # published once
    assert wait_until(lambda: _codes(st, topics.CONVERSATIONS_RAW) == ["conflicting_version"], 30)

    # Redis loses its keys: the conflicting version is still refused, and reported
    assert _flush_namespace(redis_url, st.prefix.rstrip(".")) > 0
    asyncio.run(send(st.bootstrap, raw, [(b"dup", b, [])]))
    assert wait_until(lambda: len(_codes(st, topics.CONVERSATIONS_RAW)) == 2, 60)
    scored = asyncio.run(read_topic(st.bootstrap, st.topic(topics.SCORED)))
    scores = {json.loads(r.value)["score"] for r in scored if b'"dup"' in r.value}
    assert scores == {1.0}
    _, metrics = ingest.http("/metrics")
    assert "rlstream_conflicting_versions_total" in metrics
    assert "rlstream_duplicates_dropped_total" in metrics
