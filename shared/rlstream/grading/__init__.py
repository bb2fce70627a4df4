"""Grading: a RewardSpec applied to transcripts, one at a time or group-aware in batches."""

from rlstream.grading.grade import GradeFailure, grade_many, grade_one
from rlstream.grading.spec import RewardSpec

__all__ = ["GradeFailure", "RewardSpec", "grade_many", "grade_one"]
