"""The one place where an exception becomes ack, retry or dead-letter.

Why one place: every service must make the same call for the same failure, or a poison
message stalls one service while another drops it. The rule is simple:

* the *record* is bad (input errors, schema violations, a reward that cannot score it,
  a row Postgres refuses as data) -> dead-letter it with the reason and move on;
* the *world* is bad (Postgres, Redis or Kafka unreachable, timeouts, misconfiguration)
  -> commit nothing, rewind, back off and try the same records again: nothing is lost;
* anything else is a bug seen on one record -> dead-letter it (original bytes kept for
  replay) so one message never stalls a partition.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import StrEnum

from pydantic import ValidationError

from rlstream.errors import (
    ConfigError,
    InputError,
    RewardError,
    StorageError,
    TransientError,
)


class Action(StrEnum):
    ACK = "ack"
    DLQ = "dlq"
    RETRY = "retry"


@dataclass(frozen=True, slots=True)
class Disposition:
    action: Action
    code: str
    reason: str


_TRANSIENT_NAMES = frozenset(
    {
        # asyncpg: connection-level failures (class 08, 53, 57) and pool/interface errors
        "PostgresConnectionError",
        "ConnectionDoesNotExistError",
        "ConnectionFailureError",
        "CannotConnectNowError",
        "InterfaceError",
        "InsufficientResourcesError",
        "OperatorInterventionError",
        "AdminShutdownError",
        "TooManyConnectionsError",
        "DeadlockDetectedError",
        "SerializationError",
        "QueryCanceledError",
        # redis-py
        "ConnectionError",
        "TimeoutError",
        "BusyLoadingError",
        "ReadOnlyError",
        # aiokafka
        "KafkaConnectionError",
        "KafkaTimeoutError",
        "NodeNotReadyError",
        "RequestTimedOutError",
        "NotLeaderForPartitionError",
        "LeaderNotAvailableError",
        "NotEnoughReplicasError",
        "CoordinatorNotAvailableError",
        "NotCoordinatorError",
        "UnknownTopicOrPartitionError",
        "KafkaError",
    }
)

_DATA_NAMES = frozenset(
    {
        # asyncpg class 22 / 23: the row itself is unacceptable
        "DataError",
        "CharacterNotInRepertoireError",
        "UntranslatableCharacterError",
        "InvalidTextRepresentationError",
        "StringDataRightTruncationError",
        "NumericValueOutOfRangeError",
        "IntegrityConstraintViolationError",
        "NotNullViolationError",
        "CheckViolationError",
        # aiokafka: this record can never be published as is
        "MessageSizeTooLargeError",
        "RecordTooLargeError",
    }
)


def _mro_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def disposition(exc: BaseException) -> Disposition:
    """Decide what to do with a record (or batch) whose processing raised ``exc``."""
    message = f"{type(exc).__name__}: {exc}"[:2000]
    names = _mro_names(exc)
    if isinstance(exc, InputError):
        return Disposition(Action.DLQ, exc.code, message)
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_input=False, include_url=False)
        bad_json = any(e.get("type") == "json_invalid" for e in errors)
        # why: pydantic's str() quotes the offending input, i.e. raw (PII-bearing) values
        message = f"{type(exc).__name__}: " + "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors[:10]
        )
        return Disposition(Action.DLQ, "parse_error" if bad_json else "schema_violation", message)
    if isinstance(exc, UnicodeDecodeError) or "JSONDecodeError" in names:
        return Disposition(Action.DLQ, "parse_error", message)
    if names & _DATA_NAMES:
        code = "message_too_large" if "Large" in type(exc).__name__ else "data_error"
        return Disposition(Action.DLQ, code, message)
    if isinstance(exc, RewardError):
        return Disposition(Action.DLQ, exc.code, message)
    if isinstance(exc, TransientError | StorageError | ConfigError):
        return Disposition(Action.RETRY, exc.code, message)
    if isinstance(exc, OSError | asyncio.TimeoutError) or names & _TRANSIENT_NAMES:
        return Disposition(Action.RETRY, "transient", message)
    return Disposition(Action.DLQ, "handler_error", message)


class RetryBatch(Exception):
    """Raised by a batch handler: commit nothing, rewind, back off, redeliver."""

    def __init__(self, cause: BaseException, code: str) -> None:
        super().__init__(f"{code}: {cause!r}")
        self.cause = cause
        self.code = code
