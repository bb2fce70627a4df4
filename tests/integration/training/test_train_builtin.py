"""The builtin backend trains real LoRA adapters on CPU: SFT (through the CLI), DPO, GRPO.

Each run is a couple of steps on the small model with short sequences, so it stays around a
minute on CI; the loss must be finite and move, and the adapter must hold trained weights.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlstream.services.cli.main import app
from rlstream.training import TrainConfig, train

pytestmark = pytest.mark.train


def _trained_lora(adapter: Path) -> float:
    """Largest |lora_B|: LoRA initialises B to zero, so > 0 means the optimizer moved it."""
    from safetensors.torch import load_file

    weights = load_file(str(adapter / "adapter_model.safetensors"))
    b = [t.abs().max().item() for k, t in weights.items() if "lora_B" in k]
    assert b, sorted(weights)[:5]
    return max(b)


def _check_run(out: Path, method: str, steps: int, dataset: Path) -> dict:
    metrics = json.loads((out / "metrics.json").read_text())
    run = json.loads((out / "run.json").read_text())
    manifest = json.loads((dataset / "manifest.json").read_text())
    assert metrics["steps"] == steps and metrics["method"] == method
    losses = [p["loss"] for p in metrics["curve"] if "loss" in p]
    assert len(losses) == steps and all(math.isfinite(v) for v in losses)
    assert metrics["tokens"] > 0 and metrics["tokens_per_second"] > 0
    assert run["status"] == "succeeded" and run["method"] == method
    assert run["dataset"]["id"] == manifest["dataset_id"]
    assert run["base_model"]["id"] == "SmolLM2-135M-Instruct"
    assert len(run["base_model"]["sha256"]) == 64 and len(run["argv_sha256"]) == 64
    assert run["backend"]["name"] == "builtin" and "trl==" in run["backend"]["version"]
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert (out / "adapter" / "chat_template.jinja").is_file()  # what it trained with
    return metrics


def test_sft_through_the_cli(base_model: Path, demo_dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "sft"
    result = CliRunner().invoke(
        app,
        [
            "train", "--dataset", str(demo_dataset), "--method", "sft", "--max-steps", "2",
            "--batch-size", "2", "--max-length", "96", "--output", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "succeeded" in result.output and "tokens/s" in result.output
    metrics = _check_run(out, "sft", 2, demo_dataset)
    losses = [p["loss"] for p in metrics["curve"]]
    assert losses[0] != losses[1]
    assert _trained_lora(out / "adapter") > 0


def test_dpo(base_model: Path, demo_dataset: Path, tmp_path: Path) -> None:
    config = TrainConfig(
        method="dpo", max_steps=2, batch_size=1, max_length=768, learning_rate=5e-4
    )
    result = train(demo_dataset, output_dir=tmp_path / "dpo", config=config)
    assert result.status == "succeeded", result.reason
    metrics = _check_run(tmp_path / "dpo", "dpo", 2, demo_dataset)
    losses = [p["loss"] for p in metrics["curve"]]
    assert losses[0] == pytest.approx(math.log(2), abs=1e-4)  # policy == reference at step 1
    assert losses[1] != losses[0]
    assert _trained_lora(tmp_path / "dpo" / "adapter") > 0


def test_grpo_samples_and_grades_with_the_datasets_reward(
    base_model: Path, demo_dir: Path, demo_dataset: Path, tmp_path: Path
) -> None:
    config = TrainConfig(
        method="grpo",
        max_steps=2,
        batch_size=2,
        num_generations=2,
        max_new_tokens=8,
        reward_config=str(demo_dir / "rewards.yaml"),
    )
    result = train(demo_dataset, output_dir=tmp_path / "grpo", config=config)
    assert result.status == "succeeded", result.reason
    metrics = _check_run(tmp_path / "grpo", "grpo", 2, demo_dataset)
    # 2 steps x 2 completions, every one graded by the dataset's spec
    assert metrics["reward"]["samples"] == 4 and metrics["reward"]["errors"] == 0
    assert all("reward" in p for p in metrics["curve"])
    # support-bot's spec reads the logged outcome, which a fresh sample never has
    assert any("outcome" in reason for reason in metrics["skipped_rows"])
