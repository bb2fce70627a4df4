"""Long agent rows are trained, not dropped (issue 18 item 0): left truncation keeps the
system prompt and the trained turn with the assistant-only mask exact; a run with no row
that fits stops before the model loads, saying what to change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rlstream.errors import ConfigError
from rlstream.training.chat import assistant_text, normalise_message
from rlstream.training.config import TrainConfig

pytest.importorskip("transformers")

from rlstream.training import ensure_base_model
from rlstream.training.builtin import run_trl as run_trl_mod
from rlstream.training.builtin.fit import fit_sft_rows, token_count

TRAINED = "Your flight HAT276 is rebooked; the refund of $120 goes to the Visa ending 2076."


@pytest.fixture(scope="module")
def tok() -> Any:
    return run_trl_mod.load_tokenizer(ensure_base_model())


def _long_row() -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are an airline agent. " * 20}]
    for i in range(12):
        msgs.append({"role": "user", "content": f"Question {i} about my reservation? " * 5})
        msgs.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "get_reservation", "arguments": "{}"}}],
            }
        )
        msgs.append({"role": "tool", "content": f"reservation data {i} " * 30})
        msgs.append({"role": "assistant", "content": f"Answer {i}."})
    msgs.append({"role": "user", "content": "Please rebook me."})
    msgs.append({"role": "assistant", "content": TRAINED})
    return [normalise_message(m) for m in msgs]


def _masked_text(tok: Any, messages: list[dict[str, Any]]) -> str:
    out = tok.apply_chat_template(
        messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    ids = [t for t, m in zip(out["input_ids"], out["assistant_masks"], strict=True) if m]
    return str(tok.decode(ids))


def test_long_row_is_left_truncated_with_an_exact_mask(tok: Any) -> None:
    messages = _long_row()
    full = token_count(tok, messages)
    limit = 300
    assert full > 3 * limit
    [row], counts = fit_sft_rows(tok, [{"messages": messages}], limit)
    kept = row["messages"]
    assert counts == {"whole": 0, "left_truncated": 1, "too_long": 0}
    assert kept[0] == messages[0] and kept[-1]["content"] == TRAINED
    assert kept[1]["role"] != "tool"  # never starts on a result whose call was cut away
    assert kept[1:] == messages[len(messages) - len(kept) + 1 :]  # a recent, whole suffix
    assert token_count(tok, kept) <= limit
    expected = "".join(assistant_text(m) + "<|im_end|>" for m in kept if m["role"] == "assistant")
    assert _masked_text(tok, kept) == expected
    # at the tightest limit only the system prompt and the trained turn remain
    tight = token_count(tok, [messages[0], messages[-1]])
    [row], _ = fit_sft_rows(tok, [{"messages": messages}], tight)
    assert row["messages"] == [messages[0], messages[-1]]
    assert _masked_text(tok, row["messages"]) == TRAINED + "<|im_end|>"


def test_no_row_fits_fails_before_the_model_loads(
    tok: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def no_model(*_: Any, **__: Any) -> Any:
        raise AssertionError("the model must not load for a run that trains on nothing")

    monkeypatch.setattr(run_trl_mod, "load_model", no_model)
    rows = [{"messages": _long_row()} for _ in range(3)]
    config = TrainConfig(method="sft", max_length=32)
    with pytest.raises(ConfigError) as err:
        run_trl_mod.run_trl(config, rows, ensure_base_model(), {}, "cpu", tmp_path / "a", None)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("all 3 SFT rows are longer than --max-length 32 even after keeping only")
    assert "raise --max-length to at least" in msg
