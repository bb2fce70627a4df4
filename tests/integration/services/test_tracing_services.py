"""One conversation followed by its trace on real Kafka + Postgres + Redis, across the
ingest, grader and curator processes (each exporting OTLP/HTTP to a receiver in the test),
from the raw topic to its scored rollout and the dataset release; and a training run's
trace through the evaluator's evaluation and promotion.

The raw record arrives with a ``traceparent`` of the test's own (an instrumented agent
platform's): every stage must continue that trace, parent to child, and each output
record on the topics must carry the span that made it.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from helpers import count, run_output, succeeded_run, wait_until

from rlstream.events import topics
from rlstream_testkit.otlp import OtlpReceiver, Span
from rlstream_testkit.stack import Stack, conversation, encode, produce, read_topic, wait_for_count

pytest.importorskip("opentelemetry.proto")

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
N = 40  # the release policy's min_rollouts: the last conversation completes the pool
RELEASE = {
    "rlstream_release_min_rollouts": str(N),
    "rlstream_release_min_groups": "4",
    "rlstream_release_min_gradient_support": "0.2",
    "rlstream_release_check_interval_s": "0.5",
}


def tracing_env(rx: OtlpReceiver) -> dict[str, str]:
    return {
        "rlstream_tracing": "otlp",
        "rlstream_otlp_endpoint": rx.endpoint,
        "otel_bsp_schedule_delay": "200",  # export within 0.2 s, not 5 s
    }


def new_traceparent() -> tuple[str, str, bytes]:
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return trace_id, span_id, f"00-{trace_id}-{span_id}-01".encode()


async def produce_with_headers(
    bootstrap: str, topic: str, key: bytes, value: bytes, headers: list[tuple[str, bytes]]
) -> tuple[int, int]:
    prod = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await prod.start()
    try:
        meta = await prod.send_and_wait(topic, value, key=key, headers=headers)
        return meta.partition, meta.offset
    finally:
        await prod.stop()


def traceparent_of(record: Any) -> tuple[str, str]:
    value = dict(record.headers)["traceparent"].decode()
    _, trace_id, span_id, _ = value.split("-")
    return trace_id, span_id


def one(spans: list[Span], **want: Any) -> Span:
    got = [s for s in spans if all(getattr(s, k) == v for k, v in want.items())]
    assert len(got) == 1, f"{want}: {got}"
    return got[0]


def test_one_conversation_traced_from_raw_topic_to_release(
    make_stack: Callable[..., Stack],
) -> None:
    with OtlpReceiver() as rx:
        st = make_stack(**RELEASE, **tracing_env(rx))
        st.start("ingest", "grader", "curator")
        # N - 1 conversations without a trace context fill the pool to just below the policy
        convs = [
            conversation(f"c{i}", f"task{i % 8}", resolved=(i // 8) % 3 == 0) for i in range(N)
        ]
        asyncio.run(produce(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), encode(convs[:-1])))
        assert wait_until(lambda: count(st.dsn, "SELECT count(*) FROM rollouts") == N - 1)
        # ... and the last one arrives traced: its rollout completes the pool
        trace_id, root_span, header = new_traceparent()
        last = convs[-1]
        part, offset = asyncio.run(
            produce_with_headers(
                st.bootstrap,
                st.topic(topics.CONVERSATIONS_RAW),
                last["conversation_id"].encode(),
                orjson.dumps(last),
                [("traceparent", header)],
            )
        )
        ds = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.DATASETS), 1, timeout=120))
        assert ds, "no dataset released"

        def complete(spans: list[Span]) -> bool:
            return any(s.name == "release" and s.trace_id == trace_id for s in spans)

        spans = [s for s in rx.wait_for(complete) if s.trace_id == trace_id]

    # parent to child, one process after the other, in the test's trace
    ingest = one(spans, name="ingest")
    assert ingest.service == "rlstream-ingest" and ingest.parent_span_id == root_span
    assert ingest.attributes["messaging.kafka.offset"] == offset
    assert ingest.attributes["messaging.destination.partition.id"] == str(part)
    grade = one(spans, name="grade")
    assert grade.service == "rlstream-grader" and grade.parent_span_id == ingest.span_id
    curate = one(spans, name="curate")
    assert curate.service == "rlstream-curator" and curate.parent_span_id == grade.span_id
    release = one(spans, name="release")
    assert release.service == "rlstream-curator" and release.parent_span_id == curate.span_id
    assert {s.service for s in spans} == {"rlstream-ingest", "rlstream-grader", "rlstream-curator"}
    assert not any(s.error for s in spans)

    # the release links to the curate spans of the pool's other rollouts (their own traces)
    others = {(s.trace_id, s.span_id) for s in rx.snapshot() if s.name == "curate"}
    linked = set(release.links)
    assert linked <= others and len(linked) >= N - 1
    assert len({t for t, _ in linked}) == N  # one trace per conversation

    # each record on the topics carries the span that produced it
    transcripts = asyncio.run(read_topic(st.bootstrap, st.topic(topics.TRANSCRIPTS)))
    [tr] = [r for r in transcripts if r.key == last["conversation_id"].encode()]
    assert traceparent_of(tr) == (trace_id, ingest.span_id)
    scored = asyncio.run(read_topic(st.bootstrap, st.topic(topics.SCORED)))
    [sc] = [r for r in scored if json.loads(r.value)["transcript"]["conversation_id"] == "c39"]
    assert traceparent_of(sc) == (trace_id, grade.span_id)
    assert traceparent_of(ds[0]) == (trace_id, release.span_id)

    # the curator's log line about the release carries the trace
    curator_log = st.procs[2].log_path.read_text().splitlines()
    released = [json.loads(x) for x in curator_log if '"dataset released"' in x]
    assert released and released[0]["trace_id"] == trace_id
    assert released[0]["span_id"] == release.span_id


def test_training_run_traced_through_evaluation_and_promotion(
    make_stack: Callable[..., Stack], tmp_path: Path
) -> None:
    """A ``succeeded`` event as the trainer publishes it (its train span in the header):
    the evaluator's record span, the evaluation and the promotion continue that trace, and
    the EvaluationEvent and DeploymentEvent carry it on."""
    with OtlpReceiver() as rx:
        st = make_stack(**tracing_env(rx))
        ev = st.service(
            "evaluator",
            RLSTREAM_EVALUATE_FUNCTION="evaluator_stub:evaluate",
            PYTHONPATH=os.pathsep.join(filter(None, (str(HERE), os.environ.get("PYTHONPATH")))),
            STUB_DIR=str(tmp_path / "stub"),
        )
        ev.start()
        ev.wait_ready()
        trace_id, train_span, header = new_traceparent()
        out = run_output(tmp_path, "run-good")
        key, value = succeeded_run("run-good", "support", "d" * 64, "tool_calling", out)
        asyncio.run(
            produce_with_headers(
                st.bootstrap, st.topic(topics.TRAINING), key, value, [("traceparent", header)]
            )
        )
        evals = asyncio.run(
            wait_for_count(st.bootstrap, st.topic(topics.EVALUATIONS), 1, timeout=90)
        )
        assert evals, "no evaluation published"

        def complete(spans: list[Span]) -> bool:
            return {"evaluator", "evaluate", "promote"} <= {
                s.name for s in spans if s.trace_id == trace_id
            }

        spans = [s for s in rx.wait_for(complete) if s.trace_id == trace_id]

    consumed = one(spans, name="evaluator")
    assert consumed.service == "rlstream-evaluator" and consumed.parent_span_id == train_span
    evaluate = one(spans, name="evaluate")
    assert evaluate.parent_span_id == consumed.span_id
    assert evaluate.attributes["rlstream.decision"] == "promote"
    promote = one(spans, name="promote")
    assert promote.parent_span_id == consumed.span_id
    assert traceparent_of(evals[0])[0] == trace_id
    deployments = asyncio.run(read_topic(st.bootstrap, st.topic(topics.DEPLOYMENTS)))
    assert deployments and traceparent_of(deployments[0]) == (trace_id, promote.span_id)
