"""Data retention: what rlstream deletes, per kind, and when.

Closed turn buffers and pending rollouts that no release took are rows (deleted in
Postgres); old dataset releases lose their training files and the folders of failed or
rejected runs go (on disk). Nothing in the lineage of a model that holds an alias or was
ever promoted is touched. The curator applies the policy every
``RLSTREAM_RETENTION_INTERVAL_S``; ``rlstream retention run`` applies it once. Dead letters
and the other Kafka topics are kept by each topic's ``retention.ms``
(:mod:`rlstream.events.topic_table`), not here. See docs/retention.md.
"""

from rlstream.retention.apply import RetentionStore, apply_retention
from rlstream.retention.files import PRUNED_MARKER, TRAINING_FILES
from rlstream.retention.policy import KINDS, Kind, RetentionPolicy, RetentionReport
from rlstream.retention.settings import RetentionSettings

__all__ = [
    "KINDS",
    "PRUNED_MARKER",
    "TRAINING_FILES",
    "Kind",
    "RetentionPolicy",
    "RetentionReport",
    "RetentionSettings",
    "RetentionStore",
    "apply_retention",
]
