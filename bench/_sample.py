"""Seeded sample conversations for the benchmarks, from the project's own generator.

``rlstream.sampledata.generate_transcripts`` writes realistic support / maths conversations
with a truth file (task labels, tool-call references, the verdict each reward should reach),
so the benchmarks can hand both rlstream and the peers the same conversations *and* the same
ground truth, and report accuracy next to speed.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlstream.sampledata import Truth, generate_transcripts
from rlstream.transcript import Transcript

#: the rewards both rlstream and stateset-agents ship, and the sample domain each grades
DOMAIN_OF = {"customer_support": "support", "tool_calling": "support", "gsm8k": "math"}
DOMAINS = tuple(DOMAIN_OF)


@dataclass(frozen=True)
class Sample:
    transcripts: list[Transcript]
    truth: Truth


def sample(reward: str, *, seed: int, n: int, rollouts_per_task: int = 8) -> Sample:
    """About ``n`` conversations (whole tasks of ``rollouts_per_task``, plus the generator's
    ~3% re-logged duplicates) that ``reward`` grades, with their truth."""
    ts, truth = generate_transcripts(
        seed=seed,
        n_tasks=max(1, n // rollouts_per_task),
        rollouts_per_task=rollouts_per_task,
        domain=DOMAIN_OF[reward],
    )
    return Sample(ts, truth)


def keyed(ts: list[Transcript]) -> list[Transcript]:
    """Transcripts with the task key resolved from the logged task id, as ingest does."""
    return [t.model_copy(update={"task_key": t.group_key, "task_key_rule": "explicit"}) for t in ts]
