"""``rlstream dlq list`` / ``replay`` on real Kafka with the ingest service: a dead letter
kept byte for byte goes back onto its source topic, identical and tagged; one whose value
was redacted is skipped with the reason (issue 20: replay tools)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import orjson
import pytest
from helpers import wait_until
from test_poison import dlq_entries, send

from rlstream.delivery.replay import REPLAYED_FROM
from rlstream.events import topics
from rlstream_testkit.stack import read_topic

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rlstream.services.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_replay_puts_kept_letters_back_and_skips_redacted_ones(make_stack: Any) -> None:
    st = make_stack()
    st.start("ingest")
    raw = st.topic(topics.CONVERSATIONS_RAW)
    plain = orjson.dumps({"conversation_id": "bad-1", "messages": "not a list"})
    secret = orjson.dumps({"conversation_id": "bad-2", "messages": "mail jane.doe@example.com"})
    asyncio.run(
        send(st.bootstrap, raw, [(b"bad-1", plain, [("trace", b"t1")]), (b"bad-2", secret, [])])
    )
    assert len(dlq_entries(st, topics.CONVERSATIONS_RAW, 2)) == 2

    listed = _cli("dlq", "list", raw, "--bootstrap", st.bootstrap)
    assert listed.returncode == 0, listed.stderr
    assert "2 dead letters, 1 replayable byte for byte" in listed.stdout

    done = _cli("dlq", "replay", raw, "--bootstrap", st.bootstrap)
    assert done.returncode == 0, done.stderr
    assert "replayed 1 of 2" in done.stdout and "redacted" in done.stdout

    def replayed() -> list[Any]:
        recs = asyncio.run(read_topic(st.bootstrap, raw))
        return [r for r in recs if any(k == REPLAYED_FROM for k, _ in r.headers)]

    (again,) = wait_until(replayed, 30)
    assert again.value == plain and again.key == b"bad-1"
    assert ("trace", b"t1") in list(again.headers)
    # ingest rejects it again, for the same reason: replay is for after the fix
    letters = dlq_entries(st, topics.CONVERSATIONS_RAW, 3)
    assert [e["error_code"] for e in letters].count("unknown_format") == 3


def test_replay_of_a_topic_without_dead_letters_says_so(make_stack: Any) -> None:
    st = make_stack()
    res = _cli("dlq", "replay", "no-such-topic", "--bootstrap", st.bootstrap)
    assert res.returncode != 0 and "nothing was dead-lettered" in (res.stdout + res.stderr)
