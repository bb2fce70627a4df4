"""A graded rollout: the transcript plus every reward's verdict, its id and its task key."""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rlstream.rewards.base import RewardResult
from rlstream.transcript import Transcript

TurnSource = Literal[
    "passing_rollout", "reference_match", "divergence", "after_divergence", "no_reference"
]


class TurnScore(BaseModel):
    """One assistant turn's score (None: no reference) and where it came from: the
    passing rollouts of the same task (``rlstream.curation.turn_refs``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    message_index: int = Field(ge=0)
    turn: int = Field(ge=0)
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    source: TurnSource


class ScoredRollout(BaseModel):
    """One graded rollout. ``score``/``passed`` combine the individual reward results.

    ``rollout_id`` is deterministic (conversation id + reward spec), so grading the same
    transcript twice yields the same id: that is what makes downstream effects idempotent.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    rollout_id: str
    transcript: Transcript
    results: tuple[RewardResult, ...]
    score: float = Field(ge=0.0, le=1.0)
    passed: bool
    reward_spec: str
    #: per assistant turn, scored against the passing rollouts of the same task that the
    #: grader saw (the whole file in batch; the batch's peers in the service); optional
    turns: tuple[TurnScore, ...] = ()

    @property
    def task_key(self) -> str:
        """The peer group, as grading formed it: :attr:`Transcript.group_key`, the one
        definition (the key ``rlstream.taskkey`` resolved at ingest, else a logged task field,
        else the conversation)."""
        return self.transcript.group_key

    @property
    def conversation_id(self) -> str:
        return self.transcript.conversation_id

    @staticmethod
    def make_id(conversation_id: str, reward_spec: str) -> str:
        """The one definition of a rollout id (stored ids depend on these exact bytes)."""
        digest = hashlib.sha256(f"{conversation_id}\x00{reward_spec}".encode()).hexdigest()
        return digest[:32]

    @property
    def policy(self) -> str | None:
        """The model id that produced the assistant turns: the transcript's ``model``
        (``rlstream serve`` logs the serving model's id there); None when the log did not
        say. What on-policy training selects on (``TrainConfig.on_policy``)."""
        return self.transcript.model
