"""End to end on real Kafka + Postgres + Redis: raw -> transcripts -> scored -> dataset."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

import orjson
import pytest
from helpers import count, no_rollout_in_two_datasets, pg, scored_ids

from rlstream.curation.heldout import is_heldout
from rlstream.events import DatasetReleased, RawTurnDelta, topics
from rlstream_testkit.stack import conversation, encode, produce, read_topic, wait_for_count

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

RELEASE = {
    "rlstream_release_min_rollouts": "40",
    "rlstream_release_min_groups": "4",
    "rlstream_release_min_gradient_support": "0.2",
    "rlstream_release_check_interval_s": "0.5",
}


def mixed_conversations(n: int, tasks: int = 8, prefix: str = "c") -> list[dict[str, object]]:
    # pass rate per task ~ 1/3 .. 2/3: groups stay inside the curation band
    return [
        conversation(f"{prefix}{i}", f"task{i % tasks}", resolved=(i // tasks) % 3 == 0)
        for i in range(n)
    ]


def test_end_to_end_raw_to_dataset(make_stack) -> None:
    st = make_stack(**RELEASE, rlstream_heldout_share="0.3")
    st.start("ingest", "grader", "curator")
    convs = mixed_conversations(60)
    records = encode(convs)
    # two conversations arrive as turn deltas and close on the end marker
    for cid, task in (("d1", "task1"), ("d2", "task2")):
        body = conversation(cid, task, resolved=True)
        msgs = body.pop("messages")
        for turn, m in enumerate(msgs):
            delta = RawTurnDelta(
                conversation_id=cid,
                turn=turn,
                messages=(m,),
                end=turn == len(msgs) - 1,
                metadata=body if turn == 0 else {},
            )
            records.append((cid.encode(), delta.dump_json()))
    asyncio.run(produce(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), records))

    scored = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.SCORED), 62, timeout=120))
    assert len(set(scored_ids(scored))) == 62
    transcripts = asyncio.run(read_topic(st.bootstrap, st.topic(topics.TRANSCRIPTS)))
    by_id = {json.loads(r.value)["conversation_id"]: json.loads(r.value) for r in transcripts}
    assert len(by_id["d1"]["messages"]) == 3 and by_id["d1"]["source"]["kind"] == "kafka"
    assert all(
        r.key.decode() == cid
        for r in transcripts
        for cid in [json.loads(r.value)["conversation_id"]]
    )

    ds = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.DATASETS), 1, timeout=90))
    assert ds, "no dataset released"
    ev = DatasetReleased.model_validate_json(ds[0].value)
    assert ds[0].key.decode() == ev.dataset_id and ev.agent == "support-bot"
    assert ev.profile.rollouts > 0 and ev.profile.gradient_support >= 0.2
    released = count(st.dsn, "SELECT count(*) FROM rollouts WHERE released_in = $1", ev.dataset_id)
    assert released == ev.profile.rollouts
    assert (
        count(st.dsn, "SELECT count(*) FROM lineage_edges WHERE from_id = $1", ev.dataset_id)
        == ev.lineage.task_keys
    )
    no_rollout_in_two_datasets(st.dsn)
    _heldout_kept_out(st.dsn, ev, 0.3)

    ingest = st.procs[0]
    status, text = ingest.http("/metrics")
    assert status == 200 and "rlstream_messages_consumed_total" in text
    assert ingest.http("/healthz")[0] == 200
    curator = st.procs[2]
    assert "rlstream_gradient_support{" in curator.http("/metrics")[1]


def test_dead_letters_each_reason_and_keeps_going(make_stack) -> None:
    st = make_stack(rlstream_max_message_bytes="4000", rlstream_assembly_idle_timeout_s="600")
    st.start("ingest")
    raw = st.topic(topics.CONVERSATIONS_RAW)
    closed = RawTurnDelta(
        conversation_id="late1",
        turn=0,
        end=True,
        messages=({"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}),
    )
    bad = [
        (b"k1", b"{this is not json"),  # parse_error
        (b"k2", orjson.dumps({"kind": "turn_delta", "conversation_id": "x", "turn": -1})),
        (b"k3", orjson.dumps(conversation("big", "t", True) | {"pad": "x" * 5000})),
        (b"k4", orjson.dumps({"hello": "world"})),  # unknown format
        (b"late1", closed.dump_json()),
    ]
    asyncio.run(produce(st.bootstrap, raw, bad))
    asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.TRANSCRIPTS), 1, timeout=60))
    late = RawTurnDelta(
        conversation_id="late1", turn=1, messages=({"role": "user", "content": "one more thing"},)
    )
    good = conversation("ok1", "t", True)
    asyncio.run(produce(st.bootstrap, raw, [(b"late1", late.dump_json()), *encode([good])]))

    out = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.TRANSCRIPTS), 2, timeout=60))
    assert {json.loads(r.value)["conversation_id"] for r in out} == {"late1", "ok1"}
    dlq = asyncio.run(
        wait_for_count(st.bootstrap, st.topic(topics.dlq(topics.CONVERSATIONS_RAW)), 5, timeout=30)
    )
    entries = {r.key: json.loads(r.value) for r in dlq}
    codes = {k: v["error_code"] for k, v in entries.items()}
    assert codes[b"k1"] == "parse_error"
    assert codes[b"k2"] == "schema_violation"
    assert codes[b"k3"] == "message_too_large"
    assert codes[b"k4"] in ("unknown_format", "schema_violation")
    assert codes[b"late1"] == "late_turn"
    import base64

    assert base64.b64decode(entries[b"k1"]["value_b64"]) == b"{this is not json"
    assert entries[b"k1"]["topic"] == raw and entries[b"k1"]["offset"] >= 0
    assert all(dict(r.headers).get("x-rlstream-error-code") for r in dlq)
    _, text = st.procs[0].http("/metrics")
    assert any(
        "rlstream_messages_dead_lettered_total{" in line and 'reason="late_turn"' in line
        for line in text.splitlines()
    )


def test_grader_dead_letters_ungradable_transcripts(make_stack) -> None:
    st = make_stack()
    st.start("grader")
    from rlstream.transcript import Message, Transcript

    t = Transcript(
        conversation_id="nooutcome",
        agent="a",
        redacted=True,
        messages=(Message(role="user", content="q"),),
    )
    good = t.with_updates(conversation_id="g1", outcome={"resolved": True})
    asyncio.run(
        produce(
            st.bootstrap,
            st.topic(topics.TRANSCRIPTS),
            [(b"n", t.dump_json()), (b"x", b"[1,2]"), (b"g1", good.dump_json())],
        )
    )
    scored = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.SCORED), 1, timeout=60))
    assert len(scored) == 1
    dlq = asyncio.run(
        wait_for_count(st.bootstrap, st.topic(topics.dlq(topics.TRANSCRIPTS)), 2, timeout=30)
    )
    codes = sorted(json.loads(r.value)["error_code"] for r in dlq)
    assert codes == ["missing_context", "schema_violation"]


def test_readiness_endpoint(make_stack) -> None:
    st = make_stack()
    (p,) = st.start("grader")
    assert p.http("/readyz") == (200, "ready\n")
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(f"http://127.0.0.1:{p.port}/nope", timeout=2)
    assert p.http("/nope") == (404, "not found\n")
    # An unknown path does not take the health server (or the service) down.
    assert p.alive()
    assert p.http("/healthz") == (200, "ok\n")
    assert p.http("/readyz") == (200, "ready\n")


def test_services_cli_runs_a_service(make_stack) -> None:
    import subprocess
    import sys

    from rlstream_testkit.stack import ServiceProc

    st = make_stack()
    proc = ServiceProc("grader", st.env_for("grader"), st.workdir / "cli-grader.log")
    log = open(proc.log_path, "ab")  # noqa: SIM115
    proc.proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from rlstream.services.cli.services_cmd import app; app()",
            "run",
            "grader",
        ],
        env=proc.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    st.procs.append(proc)
    proc.wait_ready(90)
    assert proc.http("/readyz")[0] == 200


def _heldout_kept_out(dsn: str, ev: DatasetReleased, share: float) -> None:
    """The curator held out exactly the keys the hash picks: recorded in Postgres, never
    released, exported in the release's heldout.jsonl."""
    keys = [r[0] for r in asyncio.run(pg(dsn, "SELECT DISTINCT task_key FROM rollouts"))]
    expected = {k for k in keys if is_heldout(ev.agent, k, share)}
    rows = asyncio.run(pg(dsn, "SELECT task_key FROM heldout_keys WHERE agent = $1", ev.agent))
    assert expected and {r[0] for r in rows} == expected
    sql = "SELECT count(*) FROM rollouts WHERE task_key = ANY($1) AND released_in IS NOT NULL"
    assert count(dsn, sql, sorted(expected)) == 0
    lines = (Path(ev.path) / "heldout.jsonl").read_bytes().splitlines()
    assert {orjson.loads(x)["task_key"] for x in lines} == expected
