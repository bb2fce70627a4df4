"""``rlstream up --demo`` with small settings reaches a gate decision through Kafka: the
evaluation it prints is read back here from the evaluations topic at the partition and
offset it printed, with the run it names on the training topic; then Ctrl-C leaves no
process behind (the trainer the curator started included)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from uphelp import alive

from rlstream.events import EvaluationEvent, TrainingRunEvent

pytestmark = [
    pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis, pytest.mark.train,
    pytest.mark.slow, pytest.mark.timeout(1500),
]  # fmt: skip

SMALL = {
    "RLSTREAM_TRAIN_MAX_STEPS": "2",
    "RLSTREAM_TRAIN_CONFIG": json.dumps(
        {
            "method": "sft",
            "batch_size": 2,
            "max_length": 128,
            "lora_rank": 4,
            "lora_alpha": 8,
            "device": "cpu",
        }
    ),
    "RLSTREAM_EVAL_MAX_PROMPTS": "3",
    "RLSTREAM_EVAL_MAX_NEW_TOKENS": "8",
    "RLSTREAM_GATE_MIN_PROMPTS": "3",
}


def _record(bootstrap: str, topic: str, partition: int, offset: int) -> Any:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def go() -> Any:
        cons = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
        await cons.start()
        try:
            tp = TopicPartition(topic, partition)
            cons.assign([tp])
            cons.seek(tp, offset)
            recs = await cons.getmany(tp, timeout_ms=10_000, max_records=1)
            return recs[tp][0]
        finally:
            await cons.stop()

    return asyncio.run(go())


def test_up_demo_reaches_a_decision_through_kafka(run_up: Any, tmp_path: Path) -> None:
    data = tmp_path / "up"
    t0 = time.monotonic()
    up = run_up(
        data, "--demo", "--stay", "--tasks", "40", "--rollouts", "3", "--rate", "200",
        "--timeout", "1200", env=SMALL,
    )  # fmt: skip
    st = up.wait_ready()
    up.wait_for("time from start to decision", timeout=1300)
    took = time.monotonic() - t0
    text = up.output()
    m = re.search(r"evaluate\s+(\S+) \[(\d+)\] @(\d+)\s+evaluation (\S+) -> (\w+)", text)
    assert m, text[-4000:]
    topic, part, off, evaluation_id, decision = m.groups()
    assert topic == st.topics["evaluations"]
    ev = EvaluationEvent.model_validate_json(
        _record(st.kafka_bootstrap, topic, int(part), int(off)).value
    )
    assert (ev.evaluation_id, ev.decision) == (evaluation_id, decision)
    assert decision in ("promote", "reject", "insufficient")
    assert f"decision: {decision}" in text
    assert ev.reasons and all(r in text for r in ev.reasons)
    m2 = re.search(r"train\s+(\S+) \[(\d+)\] @(\d+)\s+run (\S+) succeeded", text)
    assert m2, text[-4000:]
    run = TrainingRunEvent.model_validate_json(
        _record(st.kafka_bootstrap, m2.group(1), int(m2.group(2)), int(m2.group(3))).value
    )
    assert run.state == "succeeded" and run.run_id == m2.group(4) == ev.run_id
    assert run.launcher == "local"
    for step in ("feed", "ingest", "grade", "release"):
        assert re.search(rf"\b{step}\s+rlstream\.\S+ \[\d+\] @\d+", text), step
    print(f"up --demo: decision {decision} after {took:.0f} s")
    up.note_pids()
    pids = set(up.pids)
    assert up.interrupt() == 0, text[-3000:]
    time.sleep(1)
    assert alive(pids) == set()
