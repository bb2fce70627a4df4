"""The curator never releases a dataset it leaves no training method for (issue 17)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from rlstream.curation import curate
from rlstream.grading import GradeFailure, RewardSpec, grade_many
from rlstream.services.curator import seal
from rlstream.transcript import Message, Transcript

pytestmark = pytest.mark.unit


def _pending() -> list[Any]:
    transcripts = [
        Transcript(
            conversation_id=f"t{t}-r{i}",
            agent="maths-bot",
            label=f"#### {t * 7}",
            task_key=f"t{t}",
            messages=(
                Message(role="user", content=f"What is {t} times 7?"),
                Message(role="assistant", content=f"take {i}: {t * 7 + (i % 2)}"),
            ),
        )
        for t in range(2, 6)
        for i in range(4)
    ]
    return [r for r in grade_many(transcripts, RewardSpec.parse("gsm8k"))
            if not isinstance(r, GradeFailure)]  # fmt: skip


def test_a_trainable_pool_is_sealed(tmp_path: Path) -> None:
    sealed = seal.seal_dataset(_pending(), tmp_path, "maths-bot")
    assert sealed is not None and sealed.method in ("sft", "dpo", "grpo")


def test_method_none_is_not_released_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def no_method(*args: Any, **kw: Any) -> Any:
        result = curate(*args, **kw)
        return result.model_copy(update={"method": "none", "method_reason": "why-not-here"})

    monkeypatch.setattr(seal, "curate", no_method)
    with caplog.at_level(logging.INFO, logger="rlstream.services.curator"):
        assert seal.seal_dataset(_pending(), tmp_path, "maths-bot") is None
    assert any("not released" in r.getMessage() and "why-not-here" in r.getMessage()
               for r in caplog.records)  # fmt: skip
    assert [p.name for p in (tmp_path / "maths-bot").iterdir()] == []  # no folder left
