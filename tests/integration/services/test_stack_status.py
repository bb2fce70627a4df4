"""``rlstream status`` and the live view against real Kafka, PostgreSQL, Redis and real
service processes: the lag it reports is the records a stopped grader left, the services'
states are what their processes and health ports say, the dead letter is the real one."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_until

from rlstream.events import topics
from rlstream.localstack.stackfile import ServiceEndpoint, StackFile, now, write_stack
from rlstream_testkit.stack import Stack, conversation, encode, produce, wait_for_count
from rlstream_testkit.tmux import tmux_pane

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]

KEYS = {
    "raw": topics.CONVERSATIONS_RAW,
    "transcripts": topics.TRANSCRIPTS,
    "scored": topics.SCORED,
    "releases": topics.DATASETS,
    "training": topics.TRAINING,
    "evaluations": topics.EVALUATIONS,
}
SERVICES = ("ingest", "grader")


def _stack_file(st: Stack, folder: Path) -> StackFile:
    names = {k: st.topic(v) for k, v in KEYS.items()}
    names |= {f"{k}_dlq": st.topic(topics.dlq(v)) for k, v in KEYS.items()
              if k in ("raw", "transcripts", "scored", "training")}  # fmt: skip
    procs = {p.name: p for p in st.procs}
    services = {
        n: ServiceEndpoint(pid=procs[n].proc.pid, health_url=f"http://127.0.0.1:{procs[n].port}",  # type: ignore[union-attr]
                           metrics_url=f"http://127.0.0.1:{procs[n].port}/metrics")
        for n in SERVICES
    }  # fmt: skip
    stack = StackFile(
        pid=os.getpid(), started_at=now(), data_dir=str(folder), kafka_bootstrap=st.bootstrap,
        postgres_dsn=st.dsn, redis_url=st.redis_url or "", topics=names, services=services,
        consumer_groups={n: f"{st.prefix}rlstream-{n}" for n in SERVICES}, state="ready",
    )  # fmt: skip
    write_stack(stack)
    return stack


def _status(folder: Path) -> dict[str, Any]:
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "rlstream.services.cli.main", "status", "--json",
         "--data-dir", str(folder), "--sample", "0"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = dict(json.loads(res.stdout))
    # the figures docs/status.md quotes (pytest -rP shows them)
    print(f"status: collect {doc['collect_s']:.3f}s, command {time.monotonic() - t0:.1f}s")
    return doc


def _status_when(folder: Path, ok: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The first status ``ok`` accepts within a minute (commits land after each batch)."""
    found: list[dict[str, Any]] = []

    def look() -> bool:
        doc = _status(folder)
        if ok(doc):
            found.append(doc)
        return bool(found)

    wait_until(look, timeout=60)
    return found[0] if found else None


def _consumer(doc: dict[str, Any], name: str) -> dict[str, Any]:
    (topic,) = [t for t in doc["topics"]["items"] if t["name"] == name]
    (c,) = topic["consumers"]
    return dict(c)


def test_status_reports_real_lag_services_pool_and_dead_letters(
    make_stack: Any, tmp_path: Path
) -> None:
    st = make_stack()
    _, grader = st.start(*SERVICES)
    raw, trans = st.topic(topics.CONVERSATIONS_RAW), st.topic(topics.TRANSCRIPTS)
    n, m, tasks = 12, 5, 4
    first = encode([conversation(f"s{i}", f"task{i % tasks}", i % 2 == 0) for i in range(n)])
    asyncio.run(produce(st.bootstrap, raw, [*first, (b"poison", b"{this is not json")]))
    asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.SCORED), n, timeout=120))
    letters = asyncio.run(wait_for_count(st.bootstrap, raw + ".dlq", 1, timeout=60))
    folder = tmp_path / "up"
    _stack_file(st, folder)
    # everything scored and committed: no lag anywhere, both services ready
    doc = _status_when(
        folder, lambda d: _consumer(d, trans)["lag"] == 0 and _consumer(d, raw)["lag"] == 0
    )
    assert doc, "the lag never reached 0"
    states = {s["name"]: s for s in doc["services"]}
    assert states["ingest"]["ready"] and states["grader"]["ready"], states
    assert states["grader"]["consumed"] >= n and states["ingest"]["dead_lettered"] == 1
    assert {k: states[k]["ready"] for k in ("kafka", "postgres", "redis")} == dict.fromkeys(
        ("kafka", "postgres", "redis"), True
    )
    assert doc["scored_total"] == n
    assert doc["pool"]["counts"] == {"groups_pending": tasks, "groups_released": 0,
                                     "rollouts_pending": n, "rollouts_released": 0,
                                     "datasets": 0}  # fmt: skip
    (dead,) = doc["dead_letters"]["recent"]
    real = json.loads(letters[0].value)
    assert doc["dead_letters"]["total"] == 1
    assert (dead["service"], dead["code"]) == ("ingest", real["error_code"])
    assert real["error_message"] in dead["reason"] and dead["source"].startswith(raw + "/")

    # the grader stops; what ingest publishes next waits on the transcripts topic
    grader.stop()
    more = encode([conversation(f"late{i}", "task0", True) for i in range(m)])
    asyncio.run(produce(st.bootstrap, raw, more))
    asyncio.run(wait_for_count(st.bootstrap, trans, n + m, timeout=60))
    doc = _status_when(folder, lambda d: _consumer(d, raw)["lag"] == 0)
    assert doc
    lag = _consumer(doc, trans)
    assert (lag["service"], lag["consumed"], lag["lag"]) == ("grader", n, m)
    states = {s["name"]: s for s in doc["services"]}
    assert states["grader"]["alive"] is False and states["ingest"]["ready"] is True
    assert "grader: down (process exited)" in doc["problems"]

    # the same, live, in a real terminal
    argv = [sys.executable, "-m", "rlstream.services.cli.main", "status", "--watch",
            "--data-dir", str(folder)]  # fmt: skip
    with tmux_pane(argv, width=200) as pane:
        screen = pane.wait_for(lambda t: "Dead letters (1 in all" in t and "down" in t, 90)
        pane.keys("C-c")
        last = pane.wait_for(lambda t: "EXITED" in t, timeout=30)
    assert "ready" in screen and trans in screen and "process exited" in screen
    row = next(line for line in screen.splitlines() if trans in line and ".dlq" not in line)
    assert row.split()[-1] == str(m), row  # the lag column
    assert "EXITED 0" in last and "Traceback" not in last, last
