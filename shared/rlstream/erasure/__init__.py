"""Erasure (GDPR/CCPA): remove one conversation's, one user's or one agent's data.

``rlstream erase`` and any service call the same :class:`Eraser`: it finds the stored
conversations (:class:`Selector`: a conversation id, a subject field's value, a raw
personal value matched through its keyed stand-in, or an agent), deletes their rows in
Postgres in one transaction per batch (digests and counts stay, and the database refuses
to store them again), then their Redis keys, their rows in released datasets (a new
revision, or the release revoked), the copies finished runs made, tombstones on compacted
topics, and writes the erasure record. It reports the datasets, runs and models trained on
the data and, per ``RLSTREAM_ERASURE_CHAMPION``, keeps or rolls back a champion among them.
See docs/erasure.md.
"""

from rlstream.erasure.apply import Eraser, new_erasure_id
from rlstream.erasure.errors import UnknownErasureError
from rlstream.erasure.plan import ErasurePlan, ErasureReport, plan_effects
from rlstream.erasure.resume import resume
from rlstream.erasure.selector import Selector, SelectorKind, match_fields
from rlstream.erasure.settings import ErasureSettings
from rlstream.erasure.topics import TopicOutcome

__all__ = [
    "Eraser",
    "ErasurePlan",
    "ErasureReport",
    "ErasureSettings",
    "Selector",
    "SelectorKind",
    "TopicOutcome",
    "UnknownErasureError",
    "match_fields",
    "new_erasure_id",
    "plan_effects",
    "resume",
]
