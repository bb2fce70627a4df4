"""A record with PII in every field leaves none in any table, topic, file, log or metric
(issue 12, item 5; the per-field policy is docs/pii.md)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson
import pytest
from helpers import count, wait_until

from rlstream.events import topics
from rlstream_testkit.pii_probe import CARD, EMAIL, PHONE, pii_conversation, scan_everything
from rlstream_testkit.stack import produce, read_topic

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]


def test_pii_in_every_field_leaves_no_trace(make_stack) -> None:
    st = make_stack(
        rlstream_release_min_rollouts="4",
        rlstream_release_min_groups="1",
        rlstream_release_min_gradient_support="0.0",
        rlstream_release_check_interval_s="0.3",
    )
    procs = st.start("ingest", "grader", "curator")
    good = [(f"{EMAIL}-{i}".encode(), orjson.dumps(pii_conversation(i))) for i in range(8)]
    rejected = [
        (EMAIL.encode(), orjson.dumps({"hello": EMAIL, f"{EMAIL}": CARD})),  # unknown format
        (PHONE.encode(), f"not json {EMAIL} {CARD}".encode()),  # parse error
        (b"x", orjson.dumps(pii_conversation(99) | {"messages": "nope"})),  # schema
    ]
    asyncio.run(produce(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), good + rejected))
    assert wait_until(lambda: count(st.dsn, "SELECT count(*) FROM rollouts") >= 8, 120)
    assert wait_until(lambda: count(st.dsn, "SELECT count(*) FROM datasets") >= 1, 60)
    # the rejects sit on other partitions than the rollouts' conversations: under load the
    # dataset can be released before the ingest reaches them, so wait for the dead letters
    dlq_topic = st.topic(topics.dlq(topics.CONVERSATIONS_RAW))
    dlq: list[Any] = []

    def dead_letters() -> bool:
        dlq[:] = asyncio.run(read_topic(st.bootstrap, dlq_topic))
        return len(dlq) >= 3

    assert wait_until(dead_letters, 60), f"{len(dlq)} dead letters, expected 3"
    assert len(dlq) == 3
    found = scan_everything(st, procs)
    assert not found, json.dumps(found, indent=1)
