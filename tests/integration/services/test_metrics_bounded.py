"""Prometheus label values are bounded: hostile agent names cannot grow /metrics
(issue 12, item 6)."""

from __future__ import annotations

import asyncio
import time

import orjson
import pytest
from helpers import count, wait_until
from test_poison import goods, send

from rlstream.events import topics
from rlstream_testkit.stack import conversation

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]


def test_metric_labels_are_bounded_by_the_allow_list(make_stack) -> None:
    st = make_stack(
        rlstream_metric_agents='["support-bot"]',
        rlstream_metric_agents_auto_max="0",
        rlstream_release_check_interval_s="0.2",
    )
    *_, curator = st.start("ingest", "grader", "curator")
    recs = [
        (f"m{i}".encode(), orjson.dumps(conversation(f"m{i}", "t1", True, agent=f"agent-{i}")), [])
        for i in range(200)
    ]
    recs += goods(10, "sb")
    asyncio.run(send(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), recs))
    assert wait_until(lambda: count(st.dsn, "SELECT count(*) FROM rollouts") >= 210, 120)
    time.sleep(2)
    _, text = curator.http("/metrics")
    assert 'agent="support-bot"' in text
    assert "agent-1" not in text
    assert len(text.encode()) < 60_000, len(text.encode())
