"""Hostile single records (issue 12): none may lose its neighbours or stall a partition.

Each test interleaves one poison record with good conversations on the same partition and
checks that every good one comes out, the poison one is dead-lettered (or processed, when
it is valid), and the service stays ready.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from helpers import count, wait_until

from rlstream.events import topics
from rlstream_testkit.stack import conversation, read_topic, wait_for_count

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]

Rec = tuple[bytes | None, bytes, list[tuple[str, bytes]]]


class _RawKey(str):
    """A header key that encodes to bytes that are not UTF-8 (only the pure-Python record
    builder calls ``.encode`` on it; the test producer is switched to that builder)."""

    raw: bytes = b""

    def encode(self, *args: Any, **kwargs: Any) -> bytes:  # type: ignore[override]
        return self.raw


def raw_key(raw: bytes) -> str:
    k = _RawKey("x")
    k.raw = raw
    return k


async def send(bootstrap: str, topic: str, records: list[Rec], partition: int = 0) -> None:
    prod = AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=5, acks="all", max_request_size=8 << 20
    )
    await prod.start()
    try:
        futs = [
            await prod.send(topic, value=v, key=k, headers=h, partition=partition)
            for k, v, h in records
        ]
        await asyncio.gather(*futs)
    finally:
        await prod.stop()


def goods(n: int, prefix: str) -> list[Rec]:
    return [
        (f"{prefix}{i}".encode(), orjson.dumps(conversation(f"{prefix}{i}", f"t{i % 7}", True)), [])
        for i in range(n)
    ]


def transcript_ids(st: Any) -> set[str]:
    recs = asyncio.run(read_topic(st.bootstrap, st.topic(topics.TRANSCRIPTS)))
    return {json.loads(r.value)["conversation_id"] for r in recs}


def dlq_entries(st: Any, topic: str, n: int) -> list[dict[str, Any]]:
    recs = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.dlq(topic)), n, timeout=60))
    return [json.loads(r.value) for r in recs]


def test_binary_header_value_loses_no_neighbour(make_stack) -> None:
    st = make_stack()
    (ingest,) = st.start("ingest")
    recs = goods(300, "hv")
    k, v, _ = recs[150]
    recs[150] = (k, v, [("trace", b"\xff\x00"), ("ok", b"fine")])
    asyncio.run(send(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), recs))
    want = {f"hv{i}" for i in range(300)}
    got = wait_until(lambda: transcript_ids(st) >= want, 90)
    assert got, f"{len(want - transcript_ids(st))} of 300 transcripts missing"
    assert count(st.dsn, "SELECT count(*) FROM transcripts") == 300
    assert ingest.http("/readyz")[0] == 200


def test_non_utf8_header_key_is_dead_lettered_and_the_partition_flows(
    make_stack, monkeypatch
) -> None:
    from aiokafka.producer import message_accumulator, producer
    from aiokafka.record import default_records

    for mod in (message_accumulator, producer):
        monkeypatch.setattr(
            mod, "DefaultRecordBatchBuilder", default_records._DefaultRecordBatchBuilderPy
        )
    st = make_stack()
    (ingest,) = st.start("ingest")
    recs = goods(300, "hk")
    k, v, _ = recs[100]
    recs[100] = (k, v, [(raw_key(b"\xff\xfebad"), b"1")])
    asyncio.run(send(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), recs))
    want = {f"hk{i}" for i in range(300) if i != 100}
    assert wait_until(lambda: transcript_ids(st) >= want, 90), (
        f"{len(want - transcript_ids(st))} of 299 missing\n{ingest.tail()}"
    )
    (entry,) = dlq_entries(st, topics.CONVERSATIONS_RAW, 1)
    assert entry["error_code"] == "unreadable_record"
    assert entry["partition"] == 0 and entry["offset"] == 100
    assert "header key is not UTF-8" in entry["error_message"]
    _, metrics = ingest.http("/metrics")
    assert "rlstream_unreadable_records_total{" in metrics
    assert ingest.http("/readyz")[0] == 200
    # no hot restart loop: the log stays small
    assert len(ingest.tail(100_000)) < 200_000


def test_oversized_dead_letter_is_truncated_not_retried_forever(make_stack) -> None:
    st = make_stack()
    (ingest,) = st.start("ingest")
    big = b"{" + b"x" * 900_000  # invalid JSON, near the broker's 1 MB limit
    recs = goods(100, "big")
    recs.insert(50, (b"poison", big, []))
    asyncio.run(send(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), recs))
    want = {f"big{i}" for i in range(100)}
    assert wait_until(lambda: transcript_ids(st) >= want, 90), ingest.tail()
    (entry,) = dlq_entries(st, topics.CONVERSATIONS_RAW, 1)
    assert entry["error_code"] == "parse_error"
    assert entry["value_truncated"] and entry["value_bytes"] == len(big)
    import hashlib

    assert entry["value_sha256"] == hashlib.sha256(big).hexdigest()
    assert ingest.http("/readyz")[0] == 200


def test_scored_event_over_the_topic_limit_does_not_break_the_producer(make_stack) -> None:
    from rlstream.transcript import Message, Transcript

    st = make_stack()
    (grader,) = st.start("grader")
    body = "word " * 207_000  # ~1.03 MB transcript: fits its topic, its scored event does not
    huge = Transcript(
        conversation_id="huge",
        agent="a",
        redacted=True,
        messages=(Message(role="user", content="q"), Message(role="assistant", content=body)),
        outcome={"resolved": True},
    )
    tail = [
        Transcript(
            conversation_id=f"after{i}",
            agent="a",
            redacted=True,
            messages=(Message(role="user", content=f"q{i}"),),
            outcome={"resolved": True},
        )
        for i in range(30)
    ]
    recs: list[Rec] = [(b"huge", huge.dump_json(), [])]
    recs += [(t.conversation_id.encode(), t.dump_json(), []) for t in tail]
    assert len(recs[0][1]) < 1_048_000
    asyncio.run(send(st.bootstrap, st.topic(topics.TRANSCRIPTS), recs))
    scored = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.SCORED), 30, timeout=90))
    assert {json.loads(r.value)["transcript"]["conversation_id"] for r in scored} == {
        f"after{i}" for i in range(30)
    }, grader.tail()
    (entry,) = dlq_entries(st, topics.TRANSCRIPTS, 1)
    assert entry["error_code"] == "message_too_large"
    time.sleep(0.5)
    assert grader.http("/readyz")[0] == 200


def test_readyz_is_503_while_the_broker_is_down(make_stack, kafka) -> None:
    st = make_stack(rlstream_broker_probe_interval_s="1")
    (grader,) = st.start("grader")
    assert grader.http("/readyz")[0] == 200
    kafka.stop()
    try:
        down = wait_until(lambda: grader.http("/readyz")[0] == 503, 60, every=1)
        assert down, grader.http("/readyz")
        assert "broker unreachable" in grader.http("/readyz")[1]
        assert grader.http("/healthz")[0] == 200  # alive: no reason to kill the pod
    finally:
        kafka.start()
    assert wait_until(lambda: grader.http("/readyz")[0] == 200, 90, every=1), grader.tail()
