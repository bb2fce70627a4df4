"""Storage errors, all under :class:`rlstream.errors.StorageError` (or ``InputError``)."""

from __future__ import annotations

from rlstream.errors import InputError, StorageError, TransientError


class MigrationError(StorageError):
    """A migration failed, or an applied migration's file changed after it was applied."""

    code = "migration_error"


class AlreadyReleasedError(StorageError):
    """Some rollouts are already part of another dataset; nothing was marked."""

    code = "already_released"

    def __init__(self, message: str, rollout_ids: list[str]) -> None:
        super().__init__(message)
        self.rollout_ids = rollout_ids


class HeldoutReleaseError(StorageError):
    """A release tried to put a held-out task key's rollouts into a dataset; nothing was
    marked (the database refuses it: migration 0002)."""

    code = "heldout_release"


class UnknownRecordError(StorageError):
    """A write referred to a row (rollout, dataset, run, model) that does not exist."""

    code = "unknown_record"


class UnredactedTranscriptError(InputError):
    """A transcript that was not redacted was about to be stored (PII must never land)."""

    code = "unredacted_transcript"


class LockBusyError(TransientError):
    """A single-flight lock is held by someone else; try again later."""

    code = "lock_busy"
