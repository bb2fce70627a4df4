"""Ingest: any supported log shape -> redacted, task-keyed canonical Transcripts."""

from rlstream.ingest.ingestor import Ingestor, IngestRun, ingest_paths
from rlstream.ingest.models import IngestOptions, IngestSummary, Reject
from rlstream.ingest.reader import FileReader, RawItem, expand_paths, iter_file

__all__ = [
    "FileReader",
    "IngestOptions",
    "IngestRun",
    "IngestSummary",
    "Ingestor",
    "RawItem",
    "Reject",
    "expand_paths",
    "ingest_paths",
    "iter_file",
]
