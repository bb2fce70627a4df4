"""One error tree for rlstream.

Every error rlstream raises on purpose derives from :class:`RlstreamError`, so callers can
catch the whole family in one place. Services turn these into ack / retry / dead-letter
decisions in exactly one function (:func:`rlstream.delivery.disposition`); the CLI turns them
into a clear message and a non-zero exit code.
"""

from __future__ import annotations


class RlstreamError(Exception):
    """Root of every error rlstream raises deliberately."""

    #: short, stable, machine-readable code used in DLQ records and CLI output
    code: str = "rlstream_error"


class ConfigError(RlstreamError):
    """Settings, mapping files or reward configuration are wrong; fix the config."""

    code = "config_error"


class InputError(RlstreamError):
    """A record (line, message) cannot be accepted. Dead-letter or reject it, keep going."""

    code = "input_error"


class ParseError(InputError):
    """The bytes are not valid JSON / gzip / the expected container."""

    code = "parse_error"


class UnknownFormatError(InputError):
    """The record's shape matches no supported conversation format."""

    code = "unknown_format"


class SchemaViolation(InputError):
    """The record parsed but breaks the format's or the event's schema."""

    code = "schema_violation"


class MessageTooLarge(InputError):
    """The record exceeds the configured size limit."""

    code = "message_too_large"


class NestingTooDeep(InputError):
    """The record nests arrays / objects deeper than the configured limit (see rlstream.limits)."""

    code = "nesting_too_deep"


class LateTurnError(InputError):
    """A turn delta arrived for a conversation that was already closed."""

    code = "late_turn"


class RewardError(RlstreamError):
    """A reward could not be computed."""

    code = "reward_error"


class MissingContextError(RewardError, InputError):
    """A reward needs context (a label, a reference, a policy) that it did not get.

    Rewards never fall back to a silent default; they raise this instead.
    """

    code = "missing_context"


class UnknownRewardError(ConfigError):
    """No reward is registered under the requested name."""

    code = "unknown_reward"


class StorageError(RlstreamError):
    """Postgres, Redis or the artifact store failed."""

    code = "storage_error"


class TransientError(RlstreamError):
    """A temporary failure (connection lost, timeout); the operation may be retried."""

    code = "transient"


class TooManyRejectsError(RlstreamError):
    """A batch run rejected more records than ``--max-rejects`` allows."""

    code = "too_many_rejects"
