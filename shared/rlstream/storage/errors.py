"""Storage errors, all under :class:`rlstream.errors.StorageError` (or ``InputError``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from rlstream.errors import InputError, StorageError, TransientError

if TYPE_CHECKING:
    from rlstream.storage.records import PromotionRecord


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


class AliasMovedError(StorageError):
    """A compare-and-set promotion found the alias on another model than expected; nothing
    moved (the evaluation's refusal is recorded in the same transaction)."""

    code = "alias_moved"

    def __init__(self, message: str, expected: str | None, current: str | None) -> None:
        super().__init__(message)
        self.expected = expected
        self.current = current

    @classmethod
    def of(cls, promotion: PromotionRecord, expected: str | None, now: str | None) -> Self:
        was = expected[:12] if expected else "none (the base model)"
        is_ = now[:12] if now else "none"
        return cls(
            f"not promoted: the {promotion.alias} moved from {was} to {is_} after the"
            f" evaluation; the candidate {promotion.model_id[:12]} needs re-evaluation"
            f" against {is_}",
            expected,
            now,
        )


class UnredactedTranscriptError(InputError):
    """A transcript that was not redacted was about to be stored (PII must never land)."""

    code = "unredacted_transcript"


class LockBusyError(TransientError):
    """A single-flight lock is held by someone else; try again later."""

    code = "lock_busy"
