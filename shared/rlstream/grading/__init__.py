"""Grading: a RewardSpec applied to transcripts, one at a time or group-aware in batches."""

from rlstream.grading.grade import GradeFailure, grade_many, grade_one
from rlstream.grading.spec import RewardSpec, SpecResolver, spec_from_id

__all__ = ["GradeFailure", "RewardSpec", "SpecResolver", "grade_many", "grade_one", "spec_from_id"]
