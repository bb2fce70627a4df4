"""Builders for the OpenRLHF adapter tests: a real curated GRPO dataset (gsm8k-graded
maths groups) and a stand-in for TrainConfig."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from pathlib import Path

from rlstream.curation import curate, write_dataset
from rlstream.grading import GradeFailure, RewardSpec, grade_many
from rlstream.transcript import Message, Transcript

TASKS = 6


def maths_transcripts(tasks: int = TASKS, n: int = 4) -> list[Transcript]:
    """``tasks`` prompts x ``n`` rollouts, half right (gold #### a*b), all distinct text."""
    rng = random.Random(7)
    out = []
    for task in range(tasks):
        a, b = 3 + task, 7 + 2 * task
        for i in range(n):
            answer = a * b if i % 2 == 0 else a * b + 1 + i
            filler = " ".join(rng.choice(["so", "then", "thus", "hence", "next"]) for _ in range(5))
            out.append(
                Transcript(
                    conversation_id=f"t{task}-r{i}",
                    agent="math-tutor",
                    label=f"#### {a * b}",
                    task_key=f"t{task}",
                    messages=(
                        Message(role="system", content="Answer with the number."),
                        Message(role="user", content=f"What is {a} times {b}?"),
                        Message(role="assistant", content=f"{filler}: the answer is {answer}."),
                    ),
                )
            )
    return out


def write_maths_dataset(out: Path, tasks: int = TASKS) -> Path:
    spec = RewardSpec.parse("gsm8k")
    graded = [
        r for r in grade_many(maths_transcripts(tasks), spec) if not isinstance(r, GradeFailure)
    ]
    write_dataset(curate(graded), out)
    return out


@dataclass(frozen=True)
class Cfg:
    """Stands in for TrainConfig with the fields the backend reads."""

    method: str = "grpo"
    max_steps: int = 4
    learning_rate: float = 1e-6
    batch_size: int = 4
    max_length: int = 1024
    lora_rank: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.0
    temperature: float = 1.0
    beta: float = 0.0
    seed: int = 7
    num_generations: int = 4
    max_new_tokens: int = 128
    backend_args: tuple[str, ...] = field(default_factory=tuple)

    def with_(self, **kw: object) -> Cfg:
        return replace(self, **kw)  # type: ignore[arg-type]
