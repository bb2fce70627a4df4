"""``rlstream topics plan|apply`` on the real broker: a fresh cluster plans every topic,
apply creates them, a second apply is a no-op, a changed retention is altered (and the
topic's other overrides survive the classic AlterConfigs), fewer partitions is refused."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from rlstream.delivery.topics import TopicAdmin
from rlstream.events import topics
from rlstream.events.topic_table import DEFAULT_TABLE
from rlstream.settings import Settings

pytestmark = pytest.mark.kafka


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rlstream.services.cli.main", "topics", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=None if env is None else {**os.environ, **env},
    )


def _live(bootstrap: str, names: list[str]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with TopicAdmin(Settings(kafka_bootstrap=bootstrap)) as admin:
            return await admin.live(names)

    return asyncio.run(go())


def test_apply_twice_is_a_no_op_and_a_changed_retention_is_altered(
    kafka: Any, tmp_path: Path
) -> None:
    prefix = f"tp{uuid.uuid4().hex[:8]}-"
    common = ["--bootstrap", kafka.bootstrap, "--prefix", prefix, "--replication-factor", "1"]
    names = [prefix + s.name for s in DEFAULT_TABLE]
    raw = prefix + topics.CONVERSATIONS_RAW

    fresh = _cli("plan", *common)
    assert fresh.returncode == 0, fresh.stderr
    created = [ln.split()[1] for ln in fresh.stdout.splitlines() if ln.startswith("create")]
    assert sorted(created) == sorted(names)
    assert _live(kafka.bootstrap, names) == {}  # plan changed nothing

    first = _cli("apply", *common)
    assert first.returncode == 0, first.stderr
    live = _live(kafka.bootstrap, names)
    assert set(live) == set(names)
    assert live[raw].partitions == 12 and live[raw].replication_factor == 1
    assert live[raw].config["retention.ms"] == str(3 * 24 * 3600 * 1000)
    assert live[raw].config["min.insync.replicas"] == "1"

    second = _cli("apply", *common)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip().startswith("in sync"), second.stdout

    over = tmp_path / "overrides.json"
    over.write_text(
        json.dumps(
            {
                topics.CONVERSATIONS_RAW: {"config": {"retention.ms": "86400000"}},
                topics.TRAINING: {"partitions": 5},
            }
        )
    )
    diff = _cli("plan", *common, "--overrides", str(over))
    assert diff.returncode == 0, diff.stderr
    assert f"alter   {raw} retention.ms 259200000 -> 86400000" in diff.stdout
    assert f"grow    {prefix + topics.TRAINING} partitions 3 -> 5" in diff.stdout
    assert sum(ln.startswith(("create", "alter", "grow")) for ln in diff.stdout.splitlines()) == 2

    altered = _cli("apply", *common, "--overrides", str(over))
    assert altered.returncode == 0, altered.stderr
    live = _live(kafka.bootstrap, names)
    assert live[raw].config["retention.ms"] == "86400000"
    # the classic AlterConfigs replaces the set: the other overrides must have been resent
    assert live[raw].config["max.message.bytes"] == str(8 * 1024 * 1024)
    assert live[raw].config["min.insync.replicas"] == "1"
    assert live[prefix + topics.TRAINING].partitions == 5
    again = _cli("apply", *common, "--overrides", str(over))
    assert again.stdout.strip().startswith("in sync"), again.stdout

    # back to the table: 5 -> 3 partitions cannot be done; flagged, exit non-zero, one line
    refused = _cli("apply", *common)
    assert refused.returncode != 0
    assert f"REFUSED {prefix + topics.TRAINING}: has 5 partitions" in refused.stdout
    assert f"alter   {raw} retention.ms 86400000 -> 259200000" in refused.stdout
    assert refused.stderr.strip().count("\n") == 0 and "cannot be applied" in refused.stderr
    assert _live(kafka.bootstrap, [raw])[raw].config["retention.ms"] == "259200000"


def test_apply_over_sasl_ssl_uses_the_kafka_security_settings(kafka_secure: Any) -> None:
    prefix = f"ts{uuid.uuid4().hex[:8]}-"
    env = kafka_secure.env("sasl_ssl", RLSTREAM_TOPIC_PREFIX=prefix)
    env["RLSTREAM_TOPICS_REPLICATION_FACTOR"] = "1"
    first = _cli("apply", env=env)
    assert first.returncode == 0, first.stderr
    assert sum(ln.startswith("create") for ln in first.stdout.splitlines()) == len(DEFAULT_TABLE)
    again = _cli("plan", env=env)
    assert again.returncode == 0 and again.stdout.startswith("in sync"), again.stdout

    wrong = _cli("plan", env={**env, "RLSTREAM_KAFKA_SASL_PASSWORD": "not-it"})
    assert wrong.returncode == 2
    assert wrong.stderr.count("\n") == 1 and "RLSTREAM_KAFKA_SASL_PASSWORD" in wrong.stderr
