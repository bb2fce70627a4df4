"""The service chain over secured Kafka (SASL_SSL with SCRAM-SHA-512, and mTLS) on the real
broker, and what an operator sees when the security settings are wrong: one line naming
the variable, /readyz 503, no crash loop, no traceback; the CLI says it once and exits 2.

One broker (``kafka_secure``) with every listener serves the whole module. The services
connect only through the secured listener under test; the test itself creates topics and
reads results through the broker's PLAINTEXT listener.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_until

from rlstream.delivery.kafka_connect import diagnose
from rlstream.events import DatasetReleased, topics
from rlstream.settings import Settings
from rlstream_testkit.stack import (
    Stack,
    conversation,
    encode,
    free_port,
    produce,
    wait_for_count,
)
from rlstream_testkit.tls import TestCA

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]

RELEASE = {
    "RLSTREAM_RELEASE_MIN_ROLLOUTS": "24",
    "RLSTREAM_RELEASE_MIN_GROUPS": "4",
    "RLSTREAM_RELEASE_MIN_GRADIENT_SUPPORT": "0.2",
    "RLSTREAM_RELEASE_CHECK_INTERVAL_S": "0.5",
    "RLSTREAM_HELDOUT_SHARE": "0",
}


@pytest.fixture
def secure_stack(
    kafka_secure: Any, postgres_dsn_factory: Callable[[], str], redis_url: str, tmp_path: Path
) -> Iterator[Callable[..., Stack]]:
    """``make(listener, **env)``: a Stack whose services reach Kafka only through
    ``listener`` (``sasl_ssl`` or ``mtls``); its own helpers use PLAINTEXT."""
    made: list[Stack] = []

    def make(listener: str, **env: str) -> Stack:
        st = Stack(
            kafka_secure.bootstrap,
            postgres_dsn_factory(),
            redis_url,
            tmp_path / f"s{len(made)}",
            env=kafka_secure.env(listener, **env),
        )
        st.create_topics()
        made.append(st)
        return st

    yield make
    for st in made:
        st.stop_all()


@pytest.mark.parametrize("listener", ["sasl_ssl", "mtls"])
def test_chain_runs_over_secured_kafka(secure_stack: Any, kafka_secure: Any, listener: str) -> None:
    st = secure_stack(listener, **RELEASE)
    address = {"sasl_ssl": kafka_secure.sasl_ssl_bootstrap, "mtls": kafka_secure.ssl_bootstrap}
    assert st.env_for("probe")["RLSTREAM_KAFKA_BOOTSTRAP"] == address[listener]
    # the only address the services get refuses a client without the security settings
    refused = asyncio.run(diagnose(Settings(kafka_bootstrap=address[listener])))
    assert refused is not None and "closed the connection" in refused, refused
    procs = st.start("ingest", "grader", "curator")
    convs = [
        conversation(f"{listener}{i}", f"task{i % 6}", resolved=(i // 6) % 3 == 0)
        for i in range(36)
    ]
    asyncio.run(produce(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), encode(convs)))
    scored = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.SCORED), 36, timeout=120))
    assert len(scored) >= 36, "\n".join(p.tail() for p in procs)
    ds = asyncio.run(wait_for_count(st.bootstrap, st.topic(topics.DATASETS), 1, timeout=90))
    assert ds, "no dataset released\n" + "\n".join(p.tail() for p in procs)
    assert DatasetReleased.model_validate_json(ds[0].value).profile.rollouts > 0
    for p in procs:
        assert p.alive() and p.starts == 1, p.tail()


def _misconfigured(kafka_secure: Any, tmp_path: Path, case: str) -> tuple[str, dict[str, str]]:
    """(the words the one line must carry, the env overrides) for a misconfiguration."""
    if case == "wrong_password":
        return (
            f"kafka: SASL authentication failed for user '{kafka_secure.scram_user}'",
            kafka_secure.env("sasl_ssl", RLSTREAM_KAFKA_SASL_PASSWORD="not-the-password"),
        )
    if case == "untrusted_ca":
        rogue = TestCA(tmp_path / "rogue", "rogue CA")
        return (
            "is not trusted",
            kafka_secure.env("sasl_ssl", RLSTREAM_KAFKA_SSL_CAFILE=str(rogue.cafile)),
        )
    if case == "unreachable":
        dead = f"127.0.0.1:{free_port()}"
        return f"broker unreachable at {dead}", {"RLSTREAM_KAFKA_BOOTSTRAP": dead}
    env = kafka_secure.env("sasl_ssl")  # missing_username: refused before connecting
    del env["RLSTREAM_KAFKA_SASL_USERNAME"]
    return "needs RLSTREAM_KAFKA_SASL_USERNAME", env


_NAMED = {
    "wrong_password": "RLSTREAM_KAFKA_SASL_PASSWORD",
    "untrusted_ca": "RLSTREAM_KAFKA_SSL_CAFILE",
    "unreachable": "RLSTREAM_KAFKA_BOOTSTRAP",
    "missing_username": "RLSTREAM_KAFKA_SASL_USERNAME",
}


@pytest.mark.parametrize("case", sorted(_NAMED))
def test_wrong_security_gives_one_line_and_503_without_a_crash_loop(
    secure_stack: Any, kafka_secure: Any, tmp_path: Path, case: str
) -> None:
    words, env = _misconfigured(kafka_secure, tmp_path, case)
    st = secure_stack("plaintext", **env)
    grader = st.service("grader", RLSTREAM_LOG_JSON="false")
    grader.start()

    def said() -> bool:
        return words in grader.log_path.read_text(errors="replace")

    assert wait_until(said, 60, every=0.5), grader.tail()
    code, body = grader.http("/readyz")
    assert code == 503 and words in body and _NAMED[case] in body, body
    assert grader.http("/healthz")[0] == 200  # alive: a restart would not fix the settings
    time.sleep(8)  # several retries (1 s, 2 s, 4 s backoff) later:
    assert grader.alive() and grader.starts == 1
    log = grader.log_path.read_text(errors="replace")
    lines = [ln for ln in log.splitlines() if words in ln]
    assert len(lines) == 1, lines  # the same line is not repeated within a minute
    assert _NAMED[case] in lines[0]
    assert "Traceback" not in log, log[-3000:]
    assert grader.http("/readyz")[0] == 503


@pytest.mark.parametrize("case", sorted(_NAMED))
def test_cli_says_it_once_and_exits_2(
    secure_stack: Any, kafka_secure: Any, tmp_path: Path, case: str
) -> None:
    words, env = _misconfigured(kafka_secure, tmp_path, case)
    st = secure_stack("plaintext")
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("RLSTREAM_")}
    run_env.update(env)
    res = subprocess.run(
        [sys.executable, "-m", "rlstream.services.cli.main", "dlq", "list", st.topic("x")],
        env=run_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2, res.stdout + res.stderr
    err = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and words in err[0] and _NAMED[case] in err[0], res.stderr
    assert "Traceback" not in res.stderr


def test_cli_reads_dead_letters_over_mtls(secure_stack: Any, kafka_secure: Any) -> None:
    st = secure_stack("plaintext")
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("RLSTREAM_")}
    run_env.update(kafka_secure.env("mtls"))
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlstream.services.cli.main",
            "dlq",
            "list",
            st.topic(topics.CONVERSATIONS_RAW),
        ],
        env=run_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 dead letters" in res.stdout
