"""Padding-free SFT batches (issue 23 item 2): on hand-built conversation rows, the
assistant-only loss mask of the flattened batch equals the padded batch's row by row, the
model attends within each row only (same logits), and the loss is the same number.

The trainer is rlstream's (``build_trainer`` with ``trl_kwargs``) on a tiny randomly
initialised Llama with the base model's tokenizer and training template, so the test
needs no model weights and runs in seconds.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from rlstream.training.chat import normalise_message
from rlstream.training.config import TrainConfig

pytest.importorskip("trl")

import torch
from transformers import LlamaConfig, LlamaForCausalLM, set_seed

from rlstream.training import ensure_base_model
from rlstream.training.builtin import run_trl as run_trl_mod
from rlstream.training.builtin import trl_args
from rlstream.training.builtin.recorder import Recorder

pytestmark = [
    pytest.mark.unit,
    # peft reads transformers' deprecated alias (run_trl filters it the same way)
    pytest.mark.filterwarnings("ignore:.*is_gradient_checkpointing.*:FutureWarning"),
]


def _row(n: int) -> dict[str, Any]:
    """A conversation with a tool call and two trained assistant turns; n sets its length."""
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a support agent. " * n},
        {"role": "user", "content": f"Where is order {n}? " * n},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_order", "arguments": f'{{"id": {n}}}'}}],
        },
        {"role": "tool", "content": f"order {n}: shipped " * n},
        {"role": "assistant", "content": f"Order {n} has shipped and arrives soon. " * n},
    ]
    return {"messages": [normalise_message(m) for m in msgs]}


ROWS = [_row(1), _row(4), _row(2)]


@pytest.fixture(scope="module")
def tok() -> Any:
    return run_trl_mod.load_tokenizer(ensure_base_model())


def _trainer(tok: Any, tmp_path: Path, padding_free: bool) -> Any:
    """rlstream's SFT trainer, padding-free or padded as a user asks for it."""
    config = TrainConfig(
        method="sft", max_steps=1, batch_size=len(ROWS), device="cpu",
        backend_args=(f"--padding_free={str(padding_free).lower()}",),
    )  # fmt: skip
    kwargs = trl_args.trl_kwargs(config, tmp_path, "cpu", bf16=False)
    set_seed(0)
    shape = LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    model = LlamaForCausalLM(shape)
    trainer, _ = run_trl_mod.build_trainer(config, ROWS, model, tok, kwargs, Recorder(None))
    return trainer


def _per_row(batch: dict[str, Any]) -> list[tuple[list[int], list[int]]]:
    """(input ids, labels) of each row: split at position-id restarts (flat) or unpadded."""
    if "attention_mask" in batch:
        return [
            (ids[m.bool()].tolist(), lab[m.bool()].tolist())
            for ids, lab, m in zip(
                batch["input_ids"], batch["labels"], batch["attention_mask"], strict=True
            )
        ]
    starts = (batch["position_ids"][0] == 0).nonzero().flatten().tolist()
    bounds = [*starts, batch["input_ids"].shape[1]]
    return [
        (batch["input_ids"][0, a:b].tolist(), batch["labels"][0, a:b].tolist())
        for a, b in itertools.pairwise(bounds)
    ]


def _batch(trainer: Any) -> dict[str, Any]:
    return dict(next(iter(trainer.get_train_dataloader())))


def test_sft_is_padding_free_only_where_trl_supports_it(tmp_path: Path) -> None:
    base: dict[str, Any] = {"max_steps": 1, "device": "cpu"}
    sft = trl_args.trl_kwargs(TrainConfig(method="sft", **base), tmp_path, "cpu", bf16=False)
    assert sft.get("padding_free", False) is trl_args.SFT_PADDING_FREE
    asked = TrainConfig(method="sft", backend_args=("--padding_free=true",), **base)
    kw = trl_args.trl_kwargs(asked, tmp_path, "cpu", bf16=False)
    assert kw["padding_free"] is True
    assert kw["max_length"] is None  # rows are cut by fit.py; TRL refuses both
    for method in ("dpo", "grpo"):
        cfg = TrainConfig(method=method, batch_size=4, **base)
        assert "padding_free" not in trl_args.trl_kwargs(cfg, tmp_path, "cpu", bf16=False)


def test_padding_free_mask_logits_and_loss_equal_the_padded_batch(tok: Any, tmp_path: Path) -> None:
    flat_trainer = _trainer(tok, tmp_path / "flat", padding_free=True)
    padded_trainer = _trainer(tok, tmp_path / "padded", padding_free=False)
    flat, padded = _batch(flat_trainer), _batch(padded_trainer)
    assert flat["input_ids"].shape[0] == 1 and "attention_mask" not in flat
    assert padded["input_ids"].shape[0] == len(ROWS)
    assert int((padded["attention_mask"] == 0).sum()) > 0  # the padded batch does pad

    flat_rows, padded_rows = _per_row(flat), _per_row(padded)
    assert sorted(map(str, flat_rows)) == sorted(map(str, padded_rows))
    for _ids, labels in flat_rows:
        # the first label of each row never counts: the flat sequence has no row before it
        # to predict it from, and the padded row's shift drops it too
        targets = [t for t in labels[1:] if t != -100]
        trained = tok.decode(targets)
        assert "has shipped" in trained and "get_order" in trained  # both assistant turns
        assert "Where is order" not in trained and ": shipped" not in trained
        assert "support agent" not in trained  # system, user and tool text are masked
        assert trained.count("<|im_end|>") == 2  # the model learns to stop each turn

    model = flat_trainer.model.eval()
    padded_model = padded_trainer.model.eval()
    assert all(
        torch.equal(a, b)
        for a, b in zip(
            model.state_dict().values(), padded_model.state_dict().values(), strict=True
        )
    )
    with torch.no_grad():
        keep = {k: v for k, v in flat.items() if k != "labels"}
        flat_logits = model(**keep, use_cache=False).logits[0]
        padded_logits = padded_model(
            input_ids=padded["input_ids"], attention_mask=padded["attention_mask"]
        ).logits
        offset = 0
        for row, (ids, _) in zip(padded["input_ids"], padded_rows, strict=True):
            assert row[: len(ids)].tolist() == ids
        by_row = {str(ids): i for i, (ids, _) in enumerate(padded_rows)}
        for ids, _ in flat_rows:
            i = by_row[str(ids)]
            got = flat_logits[offset : offset + len(ids)]
            assert torch.allclose(got, padded_logits[i, : len(ids)], atol=1e-5)
            offset += len(ids)
        flat_loss = flat_trainer.compute_loss(model, dict(flat))
        padded_loss = padded_trainer.compute_loss(padded_model, dict(padded))
    assert torch.isfinite(flat_loss)
    assert abs(float(flat_loss) - float(padded_loss)) < 1e-5
