"""The parts of ``rlstream up`` that need no server: the environment each service gets,
the stack file's topics, the ports kept from one ``up`` to the next, and how the demo
follows the topics (records in, steps and the decision out)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rlstream.events import EvaluationEvent, TrainingRunEvent
from rlstream.events.topic_table import DEFAULT_TABLE
from rlstream.localstack.demo import _Follow
from rlstream.localstack.servers import KafkaServer, PostgresServer, RedisServer
from rlstream.localstack.supervisor import SERVICES, LocalStack, _topics_map
from rlstream.settings import Settings
from rlstream.settings_check import check_environment

pytestmark = pytest.mark.unit


def _stack(tmp: Path, **env: str) -> LocalStack:
    st = LocalStack(tmp / "up", env=env)
    st.data_dir.mkdir(parents=True)
    st._load_ports()
    st.kafka = KafkaServer(st.data_dir / "kafka", st.ports["kafka"], st.ports["kraft"])
    st.postgres = PostgresServer(st.data_dir / "postgres", st.ports["postgres"])
    st.redis = RedisServer(st.data_dir / "redis", st.ports["redis"])
    return st


def test_every_table_topic_is_in_the_stack_file() -> None:
    topics = _topics_map()
    assert set(topics.values()) == {s.name for s in DEFAULT_TABLE}
    assert {"raw", "transcripts", "scored", "releases"} <= topics.keys()


def test_service_env_wires_the_stack_and_the_caller_wins_on_tuning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLSTREAM_TRAIN_MAX_STEPS", "3")
    monkeypatch.setenv("RLSTREAM_POSTGRES_DSN", "postgresql://elsewhere/db")
    monkeypatch.setenv("RLSTREAM_PII_KEY", "x" * 40)
    st = _stack(tmp_path, RLSTREAM_RELEASE_MIN_ROLLOUTS="90")
    envs = {n: st.service_env(n) for n in SERVICES}
    ports = {int(e["RLSTREAM_HEALTH_PORT"]) for e in envs.values()}
    assert len(ports) == 4
    env = envs["curator"]
    assert env["RLSTREAM_LAUNCHER"] == "local"
    assert st.postgres is not None and env["RLSTREAM_POSTGRES_DSN"] == st.postgres.dsn
    assert env["RLSTREAM_KAFKA_BOOTSTRAP"].startswith("127.0.0.1:")
    assert env["RLSTREAM_HEALTH_HOST"] == "127.0.0.1"
    assert env["RLSTREAM_TRAIN_MAX_STEPS"] == "3"  # the caller's
    assert env["RLSTREAM_EVAL_MAX_PROMPTS"] == "150"  # the default
    assert env["RLSTREAM_RELEASE_MIN_ROLLOUTS"] == "90"
    assert "RLSTREAM_PII_KEY" not in env and env["RLSTREAM_PII_KEY_FILE"].endswith("pii.key")
    check_environment(Settings.model_fields, env)  # every name is a known setting


def test_ports_are_kept_for_the_next_up(tmp_path: Path) -> None:
    first = _stack(tmp_path).ports
    assert len(set(first.values())) == len(first)
    again = LocalStack(tmp_path / "up")
    again._load_ports()
    assert again.ports == first


def _rec(topic: str, offset: int, value: Any) -> Any:
    return SimpleNamespace(
        topic=topic, partition=1, offset=offset, key=b"k", value=value.model_dump_json().encode()
    )


def test_follow_records_steps_and_the_first_decision() -> None:
    topics = _topics_map()
    lines: list[str] = []
    f = _Follow(topics, lines.append)
    run = dict(dataset_id="d1", agent="a", reward_spec="tool_calling", backend="builtin",
               method="sft", launcher="local")  # fmt: skip
    f.take(
        SimpleNamespace(topic=topics["transcripts"], partition=0, offset=7, key=b"c1", value=b"{}")
    )
    f.take(
        SimpleNamespace(topic=topics["transcripts"], partition=0, offset=8, key=b"c2", value=b"{}")
    )
    f.take(_rec(topics["training"], 3, TrainingRunEvent(run_id="r1", state="launched", **run)))
    f.take(_rec(topics["training"], 4, TrainingRunEvent(run_id="r1", state="succeeded", **run)))
    ev = EvaluationEvent(
        event_id="e1", evaluation_id="e1", run_id="r1", agent="a", model_id="m" * 64,
        baseline_model="base", candidate_model="cand", decision="reject", reasons=("no gain",),
    )  # fmt: skip
    f.take(_rec(topics["evaluations"], 9, ev))
    assert f.counts["transcripts"] == 2
    assert [s.name for s in f.steps] == ["ingest", "train", "train", "evaluate"]
    assert str(f.steps[0].where) == "rlstream.transcripts.v1 [0] @7"
    assert f.evaluation == ev and f.failure is None
    assert "evaluation e1 -> reject" in lines[-1] and "[1] @9" in lines[-1]


def test_follow_stops_on_a_failed_run() -> None:
    topics = _topics_map()
    f = _Follow(topics, lambda line: None)
    failed = TrainingRunEvent(
        run_id="r2", dataset_id="d", agent="a", reward_spec="s", state="failed", reason="oom",
        backend="builtin", method="sft", launcher="local",
    )  # fmt: skip
    f.take(_rec(topics["training"], 0, failed))
    assert f.failure == "training run r2 failed: oom"
