"""``rlstream replay --topic`` on real Kafka, Postgres and Redis with ingest and grader
(issue 20 item 4): a backfill of the raw topic after the database lost conversations that
the seen keys still remember restores exactly those, once, through to scored rollouts,
and duplicates nothing that was stored; an ordinary re-send of them is swallowed."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from helpers import count, pg, wait_until
from test_no_stall import caught_up

from rlstream.delivery.replay import REPLAY, REPLAYED_FROM
from rlstream.events import topics
from rlstream_testkit.stack import conversation, encode, produce, read_topic

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]


def _ok(*args: str) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "rlstream.services.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def _ids(st: Any, name: str) -> Counter[str]:
    """Conversation id -> events on ``name`` (a transcript, or a scored rollout's)."""
    recs = asyncio.run(read_topic(st.bootstrap, st.topic(name)))
    events = [json.loads(r.value) for r in recs]
    return Counter(e.get("transcript", e)["conversation_id"] for e in events)


def _settled(st: Any) -> bool:
    return caught_up(st, "ingest", topics.CONVERSATIONS_RAW) and caught_up(
        st, "grader", topics.TRANSCRIPTS
    )


def test_a_raw_backfill_restores_what_the_seen_keys_hid_once_and_duplicates_nothing(
    make_stack: Any,
) -> None:
    st = make_stack()
    ingest, _ = st.start("ingest", "grader")
    raw = st.topic(topics.CONVERSATIONS_RAW)
    kept = [conversation(f"a{i}", f"t{i % 5}", True) for i in range(20)]
    lost = [conversation(f"b{i}", f"t{i % 5}", False) for i in range(20)]
    asyncio.run(produce(st.bootstrap, raw, encode(kept + lost)))

    def rollouts() -> int:
        return count(st.dsn, "SELECT count(*) FROM rollouts")

    assert wait_until(lambda: rollouts() == 40, 120), ingest.tail()
    # the database loses the b's (restored from a backup that predates them); Redis keeps
    # their seen keys, for transcripts and for scored rollouts
    asyncio.run(pg(st.dsn, "DELETE FROM rollouts WHERE conversation_id LIKE 'b%'"))
    asyncio.run(pg(st.dsn, "DELETE FROM transcripts WHERE conversation_id LIKE 'b%'"))

    time.sleep(1.0)
    resent_at = datetime.now(UTC)
    asyncio.run(produce(st.bootstrap, raw, encode(lost)))  # an ordinary re-send
    assert wait_until(lambda: _settled(st), 60)
    assert count(st.dsn, "SELECT count(*) FROM transcripts") == 20  # swallowed

    dry = _ok(
        "replay", "--topic", raw, "--from-offset", "0", "--dry-run", "--bootstrap", st.bootstrap
    )
    assert "would replay 60 records" in dry
    since = _ok("replay", "--topic", raw, "--since", resent_at.isoformat(), "--dry-run",
                "--bootstrap", st.bootstrap)  # fmt: skip
    assert "would replay 20 records" in since

    done = _ok("replay", "--topic", raw, "--from-offset", "0", "--replay-id", "bf-1",
               "--bootstrap", st.bootstrap)  # fmt: skip
    assert "replayed 60 records" in done and "replay id bf-1" in done
    assert wait_until(lambda: rollouts() == 40, 120), ingest.tail()
    assert wait_until(lambda: _settled(st), 60)

    transcripts = _ids(st, topics.TRANSCRIPTS)
    scored = _ids(st, topics.SCORED)
    for c in kept:  # stored all along: the backfill is a no-op for them
        assert transcripts[c["conversation_id"]] == 1 and scored[c["conversation_id"]] == 1
    for c in lost:  # processed exactly once more
        assert transcripts[c["conversation_id"]] == 2 and scored[c["conversation_id"]] == 2
    assert count(st.dsn, "SELECT count(*) FROM transcripts") == 40

    # the same backfill again (it now also re-reads the first one's copies): nothing new
    again = _ok("replay", "--topic", raw, "--from-offset", "0", "--bootstrap", st.bootstrap)
    assert "replayed 120 records" in again
    wait_until(lambda: len(asyncio.run(read_topic(st.bootstrap, raw))) >= 240, 30)
    assert wait_until(lambda: _settled(st), 60)
    assert _ids(st, topics.TRANSCRIPTS) == transcripts
    assert _ids(st, topics.SCORED) == scored
    assert (rollouts(), count(st.dsn, "SELECT count(*) FROM transcripts")) == (40, 40)
    dlq = asyncio.run(read_topic(st.bootstrap, st.topic(topics.dlq(topics.CONVERSATIONS_RAW))))
    assert dlq == []


def test_a_partition_replays_onto_another_topic_marked_with_its_origin(make_stack: Any) -> None:
    st = make_stack()
    raw = st.topic(topics.CONVERSATIONS_RAW)
    metas = asyncio.run(
        produce(st.bootstrap, raw, encode([conversation(f"c{i}", "t", True) for i in range(30)]))
    )
    on_1 = sorted(off for part, off, _ in metas if part == 1)
    other = st.topic("backfill.raw")

    async def create() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=st.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(other, 1, 1)])
        finally:
            await admin.close()

    asyncio.run(create())
    done = _ok("replay", "--topic", raw, "--partition", "1", "--from-offset", str(on_1[2]),
               "--to-topic", other, "--bootstrap", st.bootstrap)  # fmt: skip
    assert f"replayed {len(on_1) - 2} records of {raw} onto {other}" in done
    copies = asyncio.run(read_topic(st.bootstrap, other))
    origins = [dict(r.headers)[REPLAYED_FROM].decode() for r in copies]
    assert origins == [f"{raw}/1/{o}" for o in on_1[2:]]
    assert all(dict(r.headers)[REPLAY].startswith(b"replay-") for r in copies)
