from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from rlstream.delivery import Action, disposition
from rlstream.errors import (
    ConfigError,
    LateTurnError,
    MessageTooLarge,
    MissingContextError,
    ParseError,
    RewardError,
    StorageError,
    TransientError,
    UnknownFormatError,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("exc", "action", "code"),
    [
        (ParseError("x"), Action.DLQ, "parse_error"),
        (UnknownFormatError("x"), Action.DLQ, "unknown_format"),
        (MessageTooLarge("x"), Action.DLQ, "message_too_large"),
        (LateTurnError("x"), Action.DLQ, "late_turn"),
        (MissingContextError("x"), Action.DLQ, "missing_context"),
        (RewardError("x"), Action.DLQ, "reward_error"),
        (TransientError("x"), Action.RETRY, "transient"),
        (StorageError("x"), Action.RETRY, "storage_error"),
        (ConfigError("x"), Action.RETRY, "config_error"),
        (ConnectionRefusedError("x"), Action.RETRY, "transient"),
        (TimeoutError(), Action.RETRY, "transient"),
        (KeyError("bug"), Action.DLQ, "handler_error"),
    ],
)
def test_disposition_table(exc: BaseException, action: Action, code: str) -> None:
    d = disposition(exc)
    assert (d.action, d.code) == (action, code)
    assert type(exc).__name__ in d.reason


def test_json_and_validation_errors_are_dead_lettered() -> None:
    with pytest.raises(json.JSONDecodeError) as ji:
        json.loads("{nope")
    assert disposition(ji.value).code == "parse_error"

    class M(BaseModel):
        x: int

    with pytest.raises(ValidationError) as vi:
        M.model_validate({"x": "no"})
    assert disposition(vi.value).code == "schema_violation"
    assert disposition(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad")).code == "parse_error"


def test_third_party_errors_classified_by_name() -> None:
    import asyncpg
    from aiokafka.errors import KafkaConnectionError, MessageSizeTooLargeError
    from redis.exceptions import ConnectionError as RedisConnectionError

    assert disposition(asyncpg.exceptions.ConnectionDoesNotExistError("x")).action is Action.RETRY
    assert disposition(asyncpg.exceptions.CharacterNotInRepertoireError("x")).action is Action.DLQ
    assert disposition(RedisConnectionError("x")).action is Action.RETRY
    assert disposition(KafkaConnectionError()).action is Action.RETRY
    big = disposition(MessageSizeTooLargeError())
    assert (big.action, big.code) == (Action.DLQ, "message_too_large")
