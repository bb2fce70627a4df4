"""Curation: graded groups -> band-filtered, deduped, scanned, reproducible datasets."""

from rlstream.curation.curate import (
    GROUP_DROP_REASONS,
    ROLLOUT_DROP_REASONS,
    Conflict,
    CurationResult,
    DatasetRejectedError,
    KeptGroup,
    curate,
)
from rlstream.curation.options import CurateOptions
from rlstream.curation.writer import (
    DatasetIntegrityError,
    FileEntry,
    LineageEntry,
    Manifest,
    verify_dataset,
    write_dataset,
)

__all__ = [
    "GROUP_DROP_REASONS",
    "ROLLOUT_DROP_REASONS",
    "Conflict",
    "CurateOptions",
    "CurationResult",
    "DatasetIntegrityError",
    "DatasetRejectedError",
    "FileEntry",
    "KeptGroup",
    "LineageEntry",
    "Manifest",
    "curate",
    "verify_dataset",
    "write_dataset",
]
