"""Third-party agent logs (tau-bench, MIT) end on a user stop marker or a tool result: none
of them is truncation, and the rows trained stop at the last assistant turn."""

from __future__ import annotations

from pathlib import Path

from rlstream.curation.records import sft_row
from rlstream.ingest.ingestor import ingest_paths
from rlstream.ingest.models import IngestOptions
from rlstream.metrics.features import truncation_reason
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Transcript

SLICE = Path(__file__).parents[2] / "golden" / "tau_bench" / "gpt-4o-airline.slice.jsonl"


def test_tau_bench_endings_are_not_truncation() -> None:
    ts = [
        t for t in ingest_paths([SLICE], IngestOptions(redact=False)) if isinstance(t, Transcript)
    ]
    assert len(ts) == 4
    assert {t.messages[-1].role for t in ts} == {"user", "tool"}
    assert [truncation_reason(t) for t in ts] == [None] * 4
    for t in ts:
        r = ScoredRollout(
            rollout_id=ScoredRollout.make_id(t.conversation_id, "outcome"),
            transcript=t,
            results=(),
            score=1.0,
            passed=True,
            reward_spec="outcome",
        )
        msgs = sft_row(r)["messages"]
        assert msgs[-1]["role"] == "assistant"
        assert all(m.role != "assistant" for m in t.messages[len(msgs) :])
