"""Erasure settings (env ``RLSTREAM_*``), read by ``rlstream erase`` and the library.

``subject_fields`` is the same variable ingest reads (the fields it stores as keyed
stand-ins): erasure matches a user key in those fields. ``erasure_datasets`` says what a
released dataset that held erased rows becomes: a new revision without them (``rewrite``)
or revoked (``revoke``: its rows removed, training refuses it). ``erasure_champion`` says
what happens to a champion trained on erased data: ``keep`` (it stays, flagged in
``rlstream lineage`` and the erasure record) or ``rollback`` (the registry rolls back to the
newest earlier champion not trained on it, if any).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rlstream.ingest.subjects import DEFAULT_SUBJECT_FIELDS
from rlstream.retention.settings import RetentionSettings

DatasetPolicy = Literal["rewrite", "revoke"]
ChampionPolicy = Literal["keep", "rollback"]


class ErasureSettings(RetentionSettings):
    """What an erasure does to datasets and champions; where it finds the user."""

    subject_fields: tuple[str, ...] = Field(
        default=DEFAULT_SUBJECT_FIELDS,
        description="metadata fields naming the data subject (JSON list): stored as their "
        "keyed stand-in, what `rlstream erase --user-key` finds (docs/erasure.md)",
    )
    erasure_datasets: DatasetPolicy = Field(
        default="rewrite",
        description="a release holding erased rows: rewrite (a new revision without them) or "
        "revoke (rows removed, training refuses it)",
    )
    erasure_champion: ChampionPolicy = Field(
        default="keep",
        description="a champion trained on erased data: keep (flagged) or rollback (to the "
        "newest earlier champion not trained on it)",
    )
    erasure_batch: int = Field(
        default=2000, ge=1, description="conversations erased per Postgres transaction"
    )
    redis_namespace: str = "rlstream"
