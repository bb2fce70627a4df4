"""Erasure on the real broker: a tombstone for each erased key on a topic an operator made
compacted, never on the delete-policy ones (every topic as shipped), which are reported
with the time their records expire."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rlstream.delivery.topics import apply_cluster
from rlstream.erasure.topics import erase_topics
from rlstream.events import topics
from rlstream.events.topic_table import TopicSettings, table_for
from rlstream_testkit.stack import produce, read_topic

pytestmark = pytest.mark.kafka


def test_tombstones_on_compacted_topics_only(kafka: Any, tmp_path: Path) -> None:
    prefix = f"te{uuid.uuid4().hex[:8]}."
    over = tmp_path / "over.json"
    over.write_text(json.dumps({topics.TRANSCRIPTS: {"config": {"cleanup.policy": "compact"}}}))
    settings = TopicSettings(
        kafka_bootstrap=kafka.bootstrap, topic_prefix=prefix, topics_replication_factor=1,
        topics_overrides_file=over,
    )  # fmt: skip
    asyncio.run(apply_cluster(settings, table_for(settings)))
    transcripts, scored = prefix + topics.TRANSCRIPTS, prefix + topics.SCORED
    for name in (transcripts, scored):
        asyncio.run(produce(kafka.bootstrap, name, [(b"conv-1", b"{}"), (b"conv-2", b"{}")]))

    dry = asyncio.run(erase_topics(settings, ["conv-1"], dry_run=True))
    assert dry.tombstoned == {transcripts: 1}
    assert len(asyncio.run(read_topic(kafka.bootstrap, transcripts))) == 2  # nothing sent

    out = asyncio.run(erase_topics(settings, ["conv-1"]))
    assert out.tombstoned == {transcripts: 1}
    recs = asyncio.run(read_topic(kafka.bootstrap, transcripts))
    assert [(r.key, r.value) for r in recs if r.value is None] == [(b"conv-1", None)]
    assert all(r.value is not None for r in asyncio.run(read_topic(kafka.bootstrap, scored)))
    # the rest of the table: not compacted, expires by retention.ms (7 days for scored)
    assert transcripts not in out.retained_until
    until = datetime.fromisoformat(out.retained_until[scored])
    assert 6.9 < (until - datetime.now(UTC)).total_seconds() / 86400 <= 7.0
    assert set(out.retained_until) == {s.name for s in table_for(settings)} - {transcripts}
