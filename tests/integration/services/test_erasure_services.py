"""Erasure through the running services (issue 20 item 1): one user's conversations are
ingested, graded and released by ingest, grader and curator on the real Kafka, Postgres
and Redis, trained on by a run whose model is champion; ``rlstream erase --user-key`` runs
while other conversations keep streaming in. Then: every table, every Redis key and every
file under the data folder holds nothing of the user; on Kafka only the delete-policy
topics the erasure reports (with their expiry) still hold the user's records; a replay of
the user's raw records stores and publishes nothing; no other conversation was lost."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers import count, pg, wait_until
from redis.asyncio import Redis

from rlstream.events import topics
from rlstream.pii import keys
from rlstream.pii.fields import safe_id
from rlstream_testkit.erasure_probe import (
    USER_CID,
    needles,
    other_conversation,
    scan_files,
    scan_postgres,
    scan_redis,
    scan_topics,
    user_conversation,
)
from rlstream_testkit.stack import ALL, DLQS, TEST_PII_KEY, produce

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]

PATTERN = (True, False, True, False, True)


@pytest.fixture(autouse=True)
def _keyed() -> Iterator[None]:
    keys.configure(keys.Pseudonymiser(TEST_PII_KEY.encode()))
    yield
    keys.configure(None)


def _encode(records: list[dict[str, Any]]) -> list[tuple[bytes, bytes]]:
    return [(r["conversation_id"].encode(), orjson.dumps(r)) for r in records]


def _cli(st: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = st.env_for("cli")
    for k in ("RLSTREAM_HEALTH_PORT", "RLSTREAM_HEALTH_HOST", "RLSTREAM_SESSION_TIMEOUT_MS"):
        env.pop(k, None)
    return subprocess.run(
        [sys.executable, "-m", "rlstream.services.cli.main", *args],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _train_on(st: Any, dataset_id: str, data: Path) -> str:
    """What a finished run and its promotion leave: run row, folder, model, champion."""
    run = data / "runs" / "run-1"
    (run / "work").mkdir(parents=True)
    folder = next((data / "datasets").rglob(dataset_id))
    (run / "work" / "prompts.jsonl").write_bytes((folder / "grpo.jsonl").read_bytes())
    model = "f" * 64
    asyncio.run(
        pg(
            st.dsn,
            "WITH r AS (INSERT INTO runs (run_id, dataset_id, agent, backend, method, status,"
            " artifact_path) VALUES ('run-1', $1, 'support-bot', 'builtin', 'grpo', 'succeeded',"
            " $2) RETURNING run_id), m AS (INSERT INTO models (model_id, agent, run_id)"
            " SELECT $3, 'support-bot', run_id FROM r RETURNING model_id)"
            " INSERT INTO model_aliases (agent, alias, model_id) SELECT 'support-bot',"
            " 'champion', model_id FROM m",
            dataset_id,
            str(run),
            model,
        )
    )
    return model


def test_erasure_with_the_services_running_leaves_no_trace_and_loses_nothing(
    make_stack: Any,
) -> None:
    st = make_stack(
        rlstream_release_min_rollouts="10",
        rlstream_release_min_groups="2",
        rlstream_release_min_gradient_support="0.0",
        rlstream_release_check_interval_s="0.5",
    )
    data = Path(st.workdir) / "data"
    st.start("ingest", "grader", "curator")
    user = [user_conversation(t, f"shared-{t}", PATTERN[t]) for t in range(4)]
    others = [
        other_conversation(t * 10 + j, f"shared-{t}", PATTERN[j + 1])
        for t in range(4)
        for j in range(4)
    ]
    raw = st.topic(topics.CONVERSATIONS_RAW)
    asyncio.run(produce(st.bootstrap, raw, _encode(user + others)))
    user_cids = [safe_id(USER_CID.format(i=t)) or "" for t in range(4)]
    assert wait_until(lambda: count(st.dsn, "SELECT count(*) FROM rollouts") >= 20, 120)
    released = "SELECT count(*) FROM rollouts WHERE released_in IS NOT NULL AND conversation_id = ANY($1::text[])"
    assert wait_until(lambda: count(st.dsn, released, user_cids) >= 1, 90), "user not released"
    dataset_id = asyncio.run(pg(st.dsn, "SELECT released_in FROM rollouts WHERE conversation_id = ANY($1::text[]) AND released_in IS NOT NULL LIMIT 1", user_cids))[0][0]  # fmt: skip
    model = _train_on(st, dataset_id, data)
    user_rids = [r[0] for r in asyncio.run(pg(st.dsn, "SELECT rollout_id FROM rollouts WHERE conversation_id = ANY($1::text[])", user_cids))]  # fmt: skip

    wanted = needles([*user_cids, *user_rids])
    assert asyncio.run(scan_postgres(st.dsn, wanted)), "the needles find the user before"

    # live traffic while the erasure runs
    live = [other_conversation(1000 + i, f"live-{i % 7}", i % 3 == 0) for i in range(150)]

    def stream() -> None:
        for k in range(0, len(live), 10):
            asyncio.run(produce(st.bootstrap, raw, _encode(live[k : k + 10])))
            time.sleep(0.05)

    feeder = threading.Thread(target=stream)
    feeder.start()
    dry = _cli(st, "erase", "--user-key", "C-20931", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    res = _cli(st, "erase", "--user-key", "C-20931", "--json")
    feeder.join()
    assert res.returncode == 0, res.stdout + res.stderr
    report = json.loads(res.stdout)
    assert report["counts"]["transcripts"] == 4 == json.loads(dry.stdout)["counts"]["transcripts"]
    assert report["plan"]["models"] == [model] and report["plan"]["runs"][0]["run_id"] == "run-1"
    assert report["plan"]["datasets"][0]["outcome"] == "rewritten"

    # no other conversation lost: 16 + 150 stored, each graded once
    total = len(others) + len(live)
    assert wait_until(lambda: count(st.dsn, "SELECT count(*) FROM transcripts") >= total, 120)
    assert wait_until(lambda: count(st.dsn, "SELECT count(*) FROM rollouts") >= total, 120)
    assert count(st.dsn, "SELECT count(*) FROM transcripts") == total
    assert count(st.dsn, "SELECT count(*) FROM rollouts") == total

    # a replay of the user's raw records: refused by the store, not republished
    before = len(asyncio.run(_user_records(st)))
    asyncio.run(produce(st.bootstrap, raw, _encode(user)))
    marker = [other_conversation(5000, "after", True)]
    asyncio.run(produce(st.bootstrap, raw, _encode(marker)))
    assert wait_until(lambda: count(st.dsn, "SELECT count(*) FROM transcripts") == total + 1, 60)
    time.sleep(2)
    assert count(st.dsn, "SELECT count(*) FROM transcripts WHERE conversation_id = ANY($1::text[])", user_cids) == 0  # fmt: skip
    assert len(asyncio.run(_user_records(st))) == before

    # the scan: nothing in Postgres, Redis or files; on Kafka only what retention removes
    found = {
        **asyncio.run(scan_postgres(st.dsn, wanted)),
        **asyncio.run(_scan_redis(st, wanted)),
        **scan_files(data, wanted),
    }
    assert not found, json.dumps(found, indent=1)
    on_topics = asyncio.run(scan_topics(st.bootstrap, [st.topic(t) for t in (*ALL, *DLQS)], wanted))
    held = {k.removeprefix("topic ") for k in on_topics}
    assert st.topic(topics.TRANSCRIPTS) in held  # the caveat is real: redacted, not erased
    assert held <= set(report["topics"]["retained_until"]), held
    assert held <= {
        st.topic(t) for t in (topics.CONVERSATIONS_RAW, topics.TRANSCRIPTS, topics.SCORED)
    }
    record = asyncio.run(pg(st.dsn, "SELECT status, counts FROM erasures"))
    assert [r["status"] for r in record] == ["done"]
    lineage = _cli(st, "lineage", model, "--json")
    assert report["erasure_id"] in lineage.stdout, lineage.stdout + lineage.stderr


async def _user_records(st: Any) -> list[Any]:
    from rlstream_testkit.stack import read_topic

    recs = await read_topic(st.bootstrap, st.topic(topics.TRANSCRIPTS))
    stand_in = keys.stand_in("C-20931")
    return [r for r in recs if stand_in.encode() in (r.value or b"")]


async def _scan_redis(st: Any, wanted: list[str]) -> dict[str, list[str]]:
    redis = Redis.from_url(st.redis_url)
    try:
        found = await scan_redis(redis, wanted)
        return {k: v for k, v in found.items() if k.startswith(f"redis {st.prefix.rstrip('.')}")}
    finally:
        await redis.aclose()
