"""``rlstream train --method gspo`` trains on CPU with TRL (GRPOTrainer with sequence-level
importance ratios), and its loss differs from GRPO's token-level loss on the same batch.

The loss comparison trains TRL's GRPOTrainer twice with rlstream's GSPO config
(:func:`trl_kwargs`) from the same seed, once as it is and once with
``importance_sampling_level="token"`` (GRPO's ratio, everything else equal). Both sample the
same generation batch, which GSPO's setting trains for four optimiser steps. Step 1 is
on-policy (every ratio is 1, both losses agree); from step 2 the policy has moved and the
sequence-level ratio (the geometric mean of the token ratios, clipped once) gives a
different loss from the token-level one. The reward there is a synthetic one that varies
with the completion's length: the small model's samples on the demo's prompts are often all
graded the same by the dataset's rewards, and a group with one reward has advantage 0, so
every loss is 0 whatever the ratio.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rlstream.services.cli.main import app
from rlstream.training import TrainConfig

pytestmark = pytest.mark.train

STEPS = 3


def test_gspo_trains_on_cpu_through_the_cli(
    base_model: Path, demo_dir: Path, demo_dataset: Path, tmp_path: Path
) -> None:
    out = tmp_path / "gspo"
    result = CliRunner().invoke(
        app,
        [
            "train", "--dataset", str(demo_dataset), "--method", "gspo", "--max-steps", "2",
            "--batch-size", "4", "--reward-config", str(demo_dir / "rewards.yaml"),
            "--backend-arg=--max_completion_length=8", "--output", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "succeeded" and run["method"] == "gspo"
    assert "--importance_sampling_level=sequence" in run["argv"]
    metrics = json.loads((out / "metrics.json").read_text())
    losses = [p["loss"] for p in metrics["curve"] if "loss" in p]
    assert metrics["steps"] == 2 and len(losses) == 2 and all(math.isfinite(v) for v in losses)
    assert metrics["reward"]["samples"] > 0 and metrics["reward"]["errors"] == 0
    assert (out / "adapter" / "adapter_model.safetensors").is_file()


def _length_reward(completions: list[Any], **_: Any) -> list[float]:
    """Varies within a group almost surely: characters of the completion / 10."""
    return [len(c[0]["content"] if isinstance(c, list) else c) / 10.0 for c in completions]


def _losses(base_model: Path, rows: list[dict[str, Any]], out: Path, level: str) -> list[float]:
    import trl
    from datasets import Dataset
    from transformers import set_seed

    from rlstream.training.builtin.recorder import Recorder
    from rlstream.training.builtin.run_trl import load_model, load_tokenizer, lora_config
    from rlstream.training.builtin.trl_args import trl_kwargs

    config = TrainConfig(
        method="gspo", max_steps=STEPS, batch_size=4, learning_rate=5e-4, max_new_tokens=8,
        backend_args=(f"--importance_sampling_level={level}",),
    )  # fmt: skip
    kwargs = trl_kwargs(config, out, "cpu", bf16=False)
    tok = load_tokenizer(base_model)
    set_seed(0)
    recorder = Recorder(None)
    trainer = trl.GRPOTrainer(
        model=load_model(base_model, "cpu", False),
        args=trl.GRPOConfig(**kwargs),
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        peft_config=lora_config(config),
        reward_funcs=[_length_reward],
        callbacks=[recorder],
    )
    trainer.train()
    return recorder.losses()


@pytest.mark.filterwarnings(
    "ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"
)  # peft
def test_gspo_loss_differs_from_grpos_on_the_same_batch(
    base_model: Path, demo_dataset: Path, tmp_path: Path
) -> None:
    from rlstream.training.builtin.rows import trl_rows
    from rlstream.training.data import read_rows

    rows = [{"prompt": r["prompt"]} for r in trl_rows("gspo", read_rows(demo_dataset, "gspo"))]
    sequence = _losses(base_model, rows, tmp_path / "seq", "sequence")
    token = _losses(base_model, rows, tmp_path / "tok", "token")
    assert len(sequence) == len(token) == STEPS
    assert all(math.isfinite(v) for v in sequence + token)
    assert sequence[0] == pytest.approx(token[0], rel=1e-3, abs=1e-6)  # on-policy: ratios 1
    assert sequence[1:] != pytest.approx(token[1:], rel=1e-6, abs=1e-9)  # same batch, moved
