"""Task keys: what makes two conversations "the same prompt played again".

This package resolves the key at ingest (``Transcript.task_key``); every later stage reads a
rollout's key through :attr:`rlstream.transcript.Transcript.group_key` (the one definition,
with its fallbacks), also exposed as :attr:`rlstream.rollout.ScoredRollout.task_key`.
"""

from rlstream.taskkey.normalize import normalise_text
from rlstream.taskkey.opener_index import OpenerIndex, jaccard, shingles
from rlstream.taskkey.resolve import DEFAULT_FIELDS, TaskKeyResolver, explicit_key, opener_key

__all__ = [
    "DEFAULT_FIELDS",
    "OpenerIndex",
    "TaskKeyResolver",
    "explicit_key",
    "jaccard",
    "normalise_text",
    "opener_key",
    "shingles",
]
