"""A service without a PII key stops at start (before Kafka) with one line and exit 2,
unless it is the one-pod demo; with a key, the process's stand-ins are keyed (issue 20)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from rlstream.delivery import runtime
from rlstream.delivery.runtime import Runtime, ServiceSettings
from rlstream.pii import keys
from rlstream.pii.redact import pii_free_id

pytestmark = pytest.mark.unit

KEY = "r" * 40
DSN = SecretStr("postgresql://u:p@db.invalid:5432/x")


class Refused(Exception):
    pass


class ReachedKafka(Exception):
    pass


async def _start(settings: ServiceSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runtime.start up to its refusal (raised here) or to the Kafka wait (which follows
    the key check, so reaching it means the service was let through)."""

    async def kafka(*_a: object, **_k: object) -> None:
        raise ReachedKafka

    monkeypatch.setattr(runtime, "wait_for_kafka", kafka)
    rt = Runtime("ingest", settings)

    def refuse(exc: Exception) -> None:
        raise Refused(str(exc)) from exc

    rt.refuse_start = refuse  # type: ignore[method-assign]
    await rt.start()


async def test_no_key_is_refused_before_kafka(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(Refused, match=r"^RLSTREAM_PII_KEY is not set: a service keys"):
        await _start(ServiceSettings(postgres_dsn=DSN, health_port=-1), monkeypatch)
    assert keys.current() is None


async def test_a_key_reaches_every_stand_in_of_the_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = ServiceSettings(postgres_dsn=DSN, pii_key=SecretStr(KEY), health_port=-1)
    with pytest.raises(ReachedKafka):
        await _start(s, monkeypatch)
    p = keys.current()
    assert p is not None and pii_free_id("jane@example.com") == p.stand_in("jane@example.com")
    assert pii_free_id("jane@example.com").startswith(f"pii-{p.key_id}-")


async def test_the_demo_runs_unkeyed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(
        "rlstream.storage.embedded.start_embedded_postgres", lambda _d: "postgresql://embedded"
    )
    s = ServiceSettings(embedded_postgres=True, data_dir=tmp_path, health_port=-1)
    with pytest.raises(ReachedKafka):
        await _start(s, monkeypatch)
    assert keys.current() is None


def test_a_service_process_without_a_key_exits_2_with_one_line() -> None:
    """What a pod's log shows: the one line, no traceback (no server is needed: the check
    comes before any connection)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLSTREAM_")}
    env.update(
        RLSTREAM_POSTGRES_DSN=DSN.get_secret_value(), RLSTREAM_HEALTH_PORT="-1",
        RLSTREAM_KAFKA_BOOTSTRAP="127.0.0.1:1",
    )  # fmt: skip
    faststream = str(Path(sys.executable).parent / "faststream")
    res = subprocess.run(
        [faststream, "run", "rlstream.services.ingest.app:app"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 2, out
    assert "Traceback" not in out
    [line] = [x for x in out.splitlines() if "RLSTREAM_PII_KEY" in x]
    assert "RLSTREAM_PII_KEY is not set" in line
