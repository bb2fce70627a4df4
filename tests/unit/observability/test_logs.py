from __future__ import annotations

import json
import logging

import pytest

from rlstream.observability.logs import JsonFormatter, bound

pytestmark = pytest.mark.unit


def test_json_lines_carry_bound_ids_and_extra() -> None:
    rec = logging.LogRecord("x", logging.WARNING, __file__, 1, "hello %s", ("you",), None)
    rec.reason = "late_turn"
    with bound(conversation_id="c1", correlation_id="raw/0/5"):
        out = json.loads(JsonFormatter().format(rec))
    assert out["msg"] == "hello you" and out["level"] == "warning"
    assert out["conversation_id"] == "c1" and out["correlation_id"] == "raw/0/5"
    assert out["reason"] == "late_turn"
    after = json.loads(JsonFormatter().format(rec))
    assert "conversation_id" not in after
