"""RolloutRow: the few numbers per rollout that profiling needs, cheap to hold by the million."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rlstream.metrics.features import exact_fingerprint, fingerprint64, surface_features
from rlstream.rollout import ScoredRollout


@dataclass(frozen=True, slots=True)
class RolloutRow:
    """One graded rollout reduced to what the profile and hack scan read.

    ``digest`` is a 64-bit content fingerprint (see :func:`exact_fingerprint`); rows of a
    group with equal digests count as one *distinct* rollout in the hack-scan guard. When
    it is ``None`` every row counts as distinct.
    """

    rollout_id: str
    task_key: str
    score: float
    passed: bool
    features: Mapping[str, float] = field(default_factory=dict)
    digest: int | None = None
    #: agent version / policy version / model; the profile groups per (task, policy)
    policy: str | None = None

    @classmethod
    def from_scored(cls, s: ScoredRollout) -> RolloutRow:
        """Surface features of the transcript, overlaid with every reward's declared ones."""
        feats = surface_features(s.transcript)
        for result in s.results:
            feats.update(result.features)
        return cls(
            rollout_id=s.rollout_id,
            task_key=s.task_key,
            score=s.score,
            passed=s.passed,
            features=feats,
            digest=fingerprint64(exact_fingerprint(s.transcript)),
            policy=s.transcript.policy,
        )
