"""Delivery semantics: the one disposition function, dead letters, batches, commits, and
the one publish path (:func:`publish_once`: seen -> save -> outbox -> failures -> mark)."""

from rlstream.delivery.batch import (
    BatchResult,
    Item,
    Rejected,
    apply_isolating,
    decode_all,
    reject_or_retry,
)
from rlstream.delivery.disposition import Action, Disposition, RetryBatch, disposition
from rlstream.delivery.dlq import RecordLike, build_dlq_record, dlq_message
from rlstream.delivery.outbox import Outbox, make_producer
from rlstream.delivery.publish import Publication, publish_once
from rlstream.delivery.runner import BatchRunner

__all__ = [
    "Action",
    "BatchResult",
    "BatchRunner",
    "Disposition",
    "Item",
    "Outbox",
    "Publication",
    "RecordLike",
    "Rejected",
    "RetryBatch",
    "apply_isolating",
    "build_dlq_record",
    "decode_all",
    "disposition",
    "dlq_message",
    "make_producer",
    "publish_once",
    "reject_or_retry",
]
