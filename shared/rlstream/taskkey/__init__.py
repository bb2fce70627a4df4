"""Task keys: what makes two conversations "the same prompt played again"."""

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
