"""Issue 24 on the real servers: no record may stall a partition.

A conversation nested ~1,000 levels deep passes orjson (1,024 levels) but used to break the
recursive redactor while its dead letter was built: the batch was retried for good, the
committed offset never moved and the records behind it were never scored.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from typing import Any

import asyncpg
import orjson
import pytest
from aiokafka.admin import AIOKafkaAdminClient
from helpers import count, wait_until
from test_poison import dlq_entries, goods, send

from rlstream.events import topics
from rlstream.limits import bounded_id
from rlstream_testkit.hostile import sample

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]

EMAIL = "jane.doe@example.com"


def deep(levels: int) -> bytes:
    """A conversation whose metadata nests ``levels`` deep, with PII at the bottom."""
    inner = orjson.dumps(f"write to {EMAIL}")
    nest = b'{"a":' * levels + inner + b"}" * levels
    head = orjson.dumps({"conversation_id": "deep", "messages": []})[:-1]
    return head + b',"metadata":' + nest + b"}"


def committed(
    st: Any, service: str, partition: int = 0, topic: str = topics.CONVERSATIONS_RAW
) -> int:
    async def go() -> int:
        admin = AIOKafkaAdminClient(bootstrap_servers=st.bootstrap)
        await admin.start()
        try:
            offs = await admin.list_consumer_group_offsets(f"{st.prefix}rlstream-{service}")
        finally:
            await admin.close()
        for tp, meta in offs.items():
            if tp.topic == st.topic(topic) and tp.partition == partition:
                return int(meta.offset)
        return -1

    return asyncio.run(go())


def ends(st: Any, topic: str) -> dict[int, int]:
    """The end offset of every partition of ``topic``."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def go() -> dict[int, int]:
        cons = AIOKafkaConsumer(bootstrap_servers=st.bootstrap)
        await cons.start()
        try:
            name = st.topic(topic)
            parts = cons.partitions_for_topic(name) or set()
            if not parts:
                await cons._client.force_metadata_update()
                parts = cons.partitions_for_topic(name) or set()
            end = await cons.end_offsets([TopicPartition(name, p) for p in parts])
            return {tp.partition: int(o) for tp, o in end.items()}
        finally:
            await cons.stop()

    return asyncio.run(go())


def caught_up(st: Any, service: str, topic: str) -> bool:
    return all(
        end == 0 or committed(st, service, p, topic) == end for p, end in ends(st, topic).items()
    )


def scored(st: Any) -> int:
    return count(st.dsn, "SELECT count(*) FROM rollouts")


def test_a_1000_deep_record_at_the_head_of_a_partition_stalls_nothing(make_stack) -> None:
    st = make_stack()
    ingest, _ = st.start("ingest", "grader")
    n = 3000
    recs = [(b"deep", deep(1000), []), *goods(n, "g")]
    asyncio.run(send(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), recs))
    assert wait_until(lambda: scored(st) >= n, 180), f"{scored(st)} of {n} scored\n{ingest.tail()}"
    (entry,) = dlq_entries(st, topics.CONVERSATIONS_RAW, 1)
    assert (entry["error_code"], entry["partition"], entry["offset"]) == (
        "nesting_too_deep",
        0,
        0,
    )
    assert EMAIL.encode() not in base64.b64decode(entry["value_b64"])
    assert wait_until(lambda: committed(st, "ingest") == n + 1, 30)
    assert ingest.http("/readyz")[0] == 200
    assert ingest.http("/healthz")[0] == 200
    # the log says "dead-lettered" once: for the one letter the broker acknowledged
    assert ingest.tail(100_000).count('"dead-lettered"') == 1


def test_deep_records_in_a_batch_with_other_poisons(make_stack) -> None:
    st = make_stack()
    (ingest,) = st.start("ingest")
    recs = goods(400, "m")
    poisons = {
        50: deep(1000),
        51: b"{not json",
        120: deep(1015),
        121: b"[" * 1100 + b"]" * 1100,
        300: orjson.dumps({"conversation_id": "x", "messages": "nope"}),
        301: deep(1020),
    }
    for at in sorted(poisons):  # ascending: each lands at its final offset
        recs.insert(at, (b"p%d" % at, poisons[at], []))
    asyncio.run(send(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), recs))
    assert wait_until(lambda: count(st.dsn, "SELECT count(*) FROM transcripts") >= 400, 120), (
        ingest.tail()
    )
    entries = dlq_entries(st, topics.CONVERSATIONS_RAW, len(poisons))
    assert sorted(e["offset"] for e in entries) == sorted(poisons)
    codes = {e["offset"]: e["error_code"] for e in entries}
    assert {codes[o] for o in (50, 120, 121, 301)} == {"nesting_too_deep"}
    assert wait_until(lambda: committed(st, "ingest") == len(recs), 30)
    assert ingest.http("/readyz")[0] == 200


def test_an_8kb_conversation_id_is_digested_and_its_neighbours_flow(make_stack) -> None:
    st = make_stack()
    (ingest,) = st.start("ingest")
    long_id = "L" * 8192
    recs = goods(200, "n")
    body = json.loads(recs[0][1])
    body["conversation_id"] = long_id
    recs.insert(100, (b"long", orjson.dumps(body), []))
    asyncio.run(send(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), recs))
    assert wait_until(lambda: count(st.dsn, "SELECT count(*) FROM transcripts") >= 201, 90), (
        ingest.tail()
    )
    digest = bounded_id(long_id)
    assert count(st.dsn, "SELECT count(*) FROM transcripts WHERE conversation_id = $1", digest) == 1
    assert "handler_error" not in ingest.tail(100_000)


def test_a_letter_that_cannot_be_built_is_dead_lettered_as_unprocessable(
    kafka: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process, on the real broker: the runner's last resort when nothing of the
    record can be kept."""
    from aiokafka import AIOKafkaProducer

    from rlstream.delivery import BatchRunner, Rejected, disposition
    from rlstream.observability import Health
    from rlstream_testkit.stack import read_topic

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("nothing can be redacted")

    monkeypatch.setattr("rlstream.delivery.dlq.redact_payload", broken)
    monkeypatch.setattr("rlstream.delivery.dlq.redact_str", broken)
    topic = f"unproc{int(time.time() * 1000)}"

    class Rec:
        partition, offset, timestamp, key, headers = 0, 7, 0, b"k", ()
        value = b"anything"

    Rec.topic = topic  # type: ignore[attr-defined]

    class Msg:
        raw_message = (Rec(),)
        acked = 0

        async def ack(self) -> None:
            self.acked += 1

        async def nack(self) -> None:
            raise AssertionError("retried")

    async def go() -> Msg:
        r = BatchRunner("svc", Health(), base_backoff_s=0.0)
        r.producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all")
        await r.producer.start()
        msg = Msg()
        try:

            async def handle(recs: Any) -> list[Rejected]:
                err = ValueError("boom")
                return [Rejected(recs[0], disposition(err), err)]

            await r.run(msg, handle)
        finally:
            await r.producer.stop()
        return msg

    msg = asyncio.run(go())
    assert msg.acked == 1
    (rec,) = asyncio.run(read_topic(kafka.bootstrap, topics.dlq(topic)))
    entry = json.loads(rec.value)
    assert entry["error_code"] == "unprocessable"
    assert (entry["topic"], entry["partition"], entry["offset"]) == (topic, 0, 7)
    assert entry["value_b64"] == ""


def test_a_stalled_partition_turns_healthz_unhealthy_within_the_setting(make_stack) -> None:
    """A table lock held by someone else keeps ingest's insert waiting: nothing commits,
    so after RLSTREAM_UNHEALTHY_AFTER_S /healthz says where it is stuck."""
    st = make_stack(rlstream_stall_after_s="1", rlstream_unhealthy_after_s="6")
    (ingest,) = st.start("ingest")

    async def hold_and_watch() -> tuple[float, str, int, str]:
        conn = await asyncpg.connect(st.dsn)
        tr = conn.transaction()
        await tr.start()
        await conn.execute("LOCK TABLE transcripts IN ACCESS EXCLUSIVE MODE")
        try:
            await send(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), goods(20, "s"))
            t0 = time.monotonic()
            while time.monotonic() - t0 < 60:
                status, body = await asyncio.to_thread(ingest.http, "/healthz")
                if status == 503:
                    took = time.monotonic() - t0
                    await asyncio.to_thread(ingest.http, "/readyz")  # what sets the gauges
                    _, metrics = await asyncio.to_thread(ingest.http, "/metrics")
                    return took, body, status, metrics
                await asyncio.sleep(0.5)
            return time.monotonic() - t0, "", 200, ""
        finally:
            await tr.rollback()
            await conn.close()

    took, body, status, metrics = asyncio.run(hold_and_watch())
    assert status == 503, ingest.tail()
    assert f"partition {st.topic(topics.CONVERSATIONS_RAW)}/0 stuck at offset 0" in body
    assert took < 6 + 10  # the setting, plus a probe interval and a batch's start
    stall = re.search(r'rlstream_partition_stall_seconds\{service="ingest"\} ([0-9.e+]+)', metrics)
    assert stall is not None and float(stall.group(1)) >= 6, metrics[-2000:]
    assert wait_until(lambda: count(st.dsn, "SELECT count(*) FROM transcripts") >= 20, 60)
    assert wait_until(lambda: ingest.http("/healthz")[0] == 200, 30)


def test_a_sample_of_hostile_records_on_the_real_broker(make_stack: Any) -> None:
    """The in-process property test's strategies (tests/unit/services/
    test_record_path_property.py), a sample of 40, through real ingest and grader: every
    good neighbour is scored, every letter has a reason, both consumers commit past all."""
    stack = make_stack()
    ingest, grader = stack.start("ingest", "grader")
    recs = goods(200, "n")
    for i, (value, h) in enumerate(sample(40)):
        recs.insert(5 * i, (b"h%d" % i, value, h))
    asyncio.run(send(stack.bootstrap, stack.topic(topics.CONVERSATIONS_RAW), recs))
    good = {f"n{i}" for i in range(200)}

    def scored_good() -> set[str]:
        sql = "SELECT count(DISTINCT conversation_id) FROM rollouts WHERE conversation_id = ANY($1)"
        return good if count(stack.dsn, sql, sorted(good)) >= len(good) else set()

    assert wait_until(scored_good, 180), f"{ingest.tail()}\n{grader.tail()}"
    raw = topics.CONVERSATIONS_RAW
    assert wait_until(lambda: caught_up(stack, "ingest", raw), 60), ingest.tail()
    assert wait_until(lambda: caught_up(stack, "grader", topics.TRANSCRIPTS), 60), grader.tail()
    from rlstream_testkit.stack import read_topic

    for t in (raw, topics.TRANSCRIPTS):
        for r in asyncio.run(read_topic(stack.bootstrap, stack.topic(topics.dlq(t)))):
            letter = json.loads(r.value)
            assert letter["error_code"] and letter["error_message"], letter
    assert ingest.http("/readyz")[0] == 200 and grader.http("/readyz")[0] == 200
