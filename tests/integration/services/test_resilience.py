"""Crash, restart, rebalance and broker restart: nothing lost, nothing duplicated."""

from __future__ import annotations

import asyncio
import json
import signal
import time

import pytest
from helpers import count, no_rollout_in_two_datasets, scored_ids, wait_until

from rlstream.events import topics
from rlstream_testkit.stack import conversation, encode, produce, read_topic, wait_for_count

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


def convs(n: int, prefix: str) -> list[tuple[bytes, bytes]]:
    return encode(
        [conversation(f"{prefix}{i}", f"task{i % 10}", (i // 10) % 3 == 0) for i in range(n)]
    )


def produce_in_chunks(st, records, chunks: int, between=None) -> None:
    size = (len(records) + chunks - 1) // chunks
    for i in range(chunks):
        asyncio.run(
            produce(
                st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), records[i * size : (i + 1) * size]
            )
        )
        if between is not None:
            between(i)


def all_scored_once(st, n: int, timeout: float = 120.0) -> None:
    ok = wait_until(lambda: count(st.dsn, "SELECT count(*) FROM rollouts") >= n, timeout)
    assert ok, f"only {count(st.dsn, 'SELECT count(*) FROM rollouts')} of {n} rollouts stored"
    assert count(st.dsn, "SELECT count(*) FROM rollouts") == n
    scored = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.SCORED), n, timeout=30))
    assert len(set(scored_ids(scored))) == n  # the topic may repeat (at-least-once), never miss


def test_kill_each_service_mid_stream(make_stack) -> None:
    st = make_stack(
        rlstream_release_min_rollouts="60",
        rlstream_release_min_groups="5",
        rlstream_release_min_gradient_support="0.2",
        rlstream_release_check_interval_s="0.3",
    )
    ingest, grader, curator = st.start("ingest", "grader", "curator")
    records = convs(600, "r")
    victims = [ingest, grader, curator]

    def crash(i: int) -> None:
        if i < len(victims):
            time.sleep(0.3)
            victims[i].kill(signal.SIGKILL)
            victims[i].start()
            victims[i].wait_ready(90)

    produce_in_chunks(st, records, 4, crash)
    all_scored_once(st, 600)
    assert count(st.dsn, "SELECT count(*) FROM transcripts") == 600
    wait_until(lambda: count(st.dsn, "SELECT count(*) FROM datasets") >= 1, 60)
    no_rollout_in_two_datasets(st.dsn)
    assert all(p.starts == 2 for p in victims)


def test_rebalance_two_graders_in_one_group(make_stack) -> None:
    st = make_stack()
    st.start("ingest")
    g1, g2 = st.start("grader", "grader")
    # both members own partitions before the data flows (the group join takes a moment)
    assert wait_until(lambda: all("assigned to partitions" in g.tail(400) for g in (g1, g2)), 60), (
        g1.tail() + g2.tail()
    )
    records = convs(400, "b")

    def stop_one(i: int) -> None:
        if i == 1:
            g2.stop()  # graceful leave: its partitions move to g1

    produce_in_chunks(st, records, 3, stop_one)
    all_scored_once(st, 400)
    # after g2 left, g1 was assigned again (the rebalance happened)
    assert g1.tail(400).count("assigned to partitions") >= 2


def test_broker_restart(make_stack, kafka) -> None:
    st = make_stack()
    st.start("ingest", "grader")
    records = convs(300, "k")

    def bounce(i: int) -> None:
        if i == 0:
            kafka.restart()

    produce_in_chunks(st, records, 2, bounce)
    all_scored_once(st, 300, timeout=180)
    assert all(p.alive() for p in st.procs)
    transcripts = asyncio.run(read_topic(st.bootstrap, st.topic(topics.TRANSCRIPTS)))
    assert {json.loads(r.value)["conversation_id"] for r in transcripts} >= {
        f"k{i}" for i in range(300)
    }


def _deltas(cid: str, task: str, turns: range, end_at: int | None) -> list[tuple[bytes, bytes]]:
    from rlstream.events import RawTurnDelta

    body = conversation(cid, task, resolved=True)
    msgs = body.pop("messages")
    out = []
    for t in turns:
        d = RawTurnDelta(
            conversation_id=cid,
            turn=t,
            messages=(msgs[t],),
            end=t == end_at,
            metadata=body if t == 0 else {},
        )
        out.append((cid.encode(), d.dump_json()))
    return out


def test_turn_buffers_survive_an_ingest_kill(make_stack) -> None:
    st = make_stack()
    (ingest,) = st.start("ingest")
    raw = st.topic(topics.CONVERSATIONS_RAW)
    asyncio.run(produce(st.bootstrap, raw, _deltas("keep", "t1", range(2), None)))
    assert wait_until(lambda: count(st.dsn, "SELECT count(*) FROM turn_buffers") >= 1, 30)
    time.sleep(1.0)  # let the offsets of the two deltas be committed
    ingest.kill(signal.SIGKILL)
    ingest.start()
    ingest.wait_ready(90)
    asyncio.run(produce(st.bootstrap, raw, _deltas("keep", "t1", range(2, 3), 2)))
    out = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.TRANSCRIPTS), 1, timeout=60))
    (t,) = [json.loads(r.value) for r in out]
    assert t["conversation_id"] == "keep" and len(t["messages"]) == 3
    assert t["metadata"]["assembled"] == {"turns": 3, "closed_by": "end", "missing_turns": []}


def test_idle_timeout_closes_a_conversation_without_end_marker(make_stack) -> None:
    st = make_stack(rlstream_assembly_idle_timeout_s="2", rlstream_assembly_sweep_interval_s="0.5")
    st.start("ingest")
    asyncio.run(
        produce(
            st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), _deltas("idle", "t2", range(2), None)
        )
    )
    out = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.TRANSCRIPTS), 1, timeout=60))
    (t,) = [json.loads(r.value) for r in out]
    assert t["conversation_id"] == "idle" and len(t["messages"]) == 2
    assert t["metadata"]["assembled"]["closed_by"] == "idle"


def test_closed_turn_buffers_are_purged_after_their_retention(make_stack) -> None:
    """Retention (issue 20's first step): closed buffers go after
    RLSTREAM_ASSEMBLY_CLOSED_RETENTION_S; open ones stay, whatever their age."""
    st = make_stack(
        rlstream_assembly_closed_retention_s="1",
        rlstream_assembly_purge_interval_s="1",
        rlstream_assembly_sweep_interval_s="0.5",
    )
    st.start("ingest")
    raw = st.topic(topics.CONVERSATIONS_RAW)
    asyncio.run(produce(st.bootstrap, raw, _deltas("done", "t3", range(3), 2)))
    asyncio.run(produce(st.bootstrap, raw, _deltas("open", "t4", range(2), None)))
    assert asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.TRANSCRIPTS), 1, timeout=60))
    gone = "SELECT count(*) FROM turn_buffers WHERE conversation_id LIKE 'done%'"
    assert wait_until(lambda: count(st.dsn, gone) == 0, 30)
    still = "SELECT count(*) FROM turn_buffers WHERE conversation_id = 'open' AND NOT closed"
    assert count(st.dsn, still) == 1


def test_turn_deltas_span_a_rebalance_between_two_ingests(make_stack) -> None:
    st = make_stack()
    a, b = st.start("ingest", "ingest")
    assert wait_until(lambda: all("assigned to partitions" in p.tail(400) for p in (a, b)), 60), (
        a.tail() + b.tail()
    )
    raw = st.topic(topics.CONVERSATIONS_RAW)
    ids = [f"span{i}" for i in range(12)]  # spread over every partition
    for cid in ids:
        asyncio.run(produce(st.bootstrap, raw, _deltas(cid, "t", range(2), None)))
    assert wait_until(lambda: count(st.dsn, "SELECT count(*) FROM turn_buffers") >= 12, 30)
    time.sleep(1.0)
    a.stop()  # its partitions move to b, which has never seen those conversations
    for cid in ids:
        asyncio.run(produce(st.bootstrap, raw, _deltas(cid, "t", range(2, 3), 2)))
    out = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.TRANSCRIPTS), 12, timeout=60))
    got = {json.loads(r.value)["conversation_id"]: json.loads(r.value) for r in out}
    assert set(got) == set(ids)
    assert all(len(t["messages"]) == 3 for t in got.values())
