"""The GPU-hour estimate (documented formula) and the per-run / per-day / time ceilings."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from rlstream.errors import ConfigError
from rlstream.launch import LaunchSettings
from rlstream.training.budget import (
    DEFAULT_PARAMS,
    budget_for_dataset,
    check_budget,
    estimate_gpu_hours,
    model_params,
)

pytestmark = pytest.mark.unit


def test_formula_by_method() -> None:
    kw = {"tokens": 1_000_000, "params": 1e9, "gpu_peak_tflops": 100.0, "mfu": 0.5}
    sft = estimate_gpu_hours(method="sft", **kw)
    assert sft.flops == 6e15 and sft.gpu_hours == pytest.approx(6e15 / 5e13 / 3600)
    assert estimate_gpu_hours(method="dpo", **kw).flops == 8e15
    grpo = estimate_gpu_hours(method="grpo", rows=10, num_generations=4, max_new_tokens=100, **kw)
    completions = 10 * 4 * 100
    assert grpo.flops == 8e9 * (1_000_000 * 4 + completions) + 2e9 * completions * 3
    two = estimate_gpu_hours(method="sft", gpus=2, **kw)
    assert two.wall_hours == pytest.approx(sft.gpu_hours / 2)
    with pytest.raises(ConfigError):
        estimate_gpu_hours(method="ppo", **kw)


def test_ceilings() -> None:
    s = LaunchSettings(
        budget_gpu_hours_per_run=2, budget_gpu_hours_per_day=5, k8s_active_deadline_s=3600
    )
    est = estimate_gpu_hours(method="sft", tokens=1, params=1)
    assert check_budget(est.model_copy(update={"gpu_hours": 1.0, "wall_hours": 0.5}), s).ok
    big = check_budget(est.model_copy(update={"gpu_hours": 3.0}), s)
    assert not big.ok and "per-run budget of 2" in (big.reason or "")
    day = check_budget(est.model_copy(update={"gpu_hours": 1.5}), s, spent_today=4.0)
    assert not day.ok and "per-day budget of 5" in (day.reason or "")
    slow = check_budget(est.model_copy(update={"gpu_hours": 1.5, "wall_hours": 1.5}), s)
    assert not slow.ok and "time ceiling" in (slow.reason or "")


def test_model_size_from_headers_name_or_setting(tmp_path: Path) -> None:
    header = json.dumps(
        {"__metadata__": {}, "a": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]}}
    ).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    assert model_params(tmp_path) == 12
    assert model_params("Qwen/Qwen2.5-7B-Instruct") == 7e9
    assert model_params("HuggingFaceTB/SmolLM2-360M") == 360e6
    assert model_params(None) == DEFAULT_PARAMS
    assert model_params("anything", fallback=5.0) == 5.0
    with pytest.raises(ConfigError, match="RLSTREAM_BUDGET_MODEL_PARAMS"):
        model_params("my-model")


def test_budget_for_a_dataset_folder(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"method": "dpo"}))
    row = '{"prompt": "' + "x" * 3985 + '"}\n'  # 4,000 bytes = 1,000 tokens
    (tmp_path / "dpo.jsonl").write_text(row * 10)
    d = budget_for_dataset(tmp_path, "auto", None, LaunchSettings())
    assert d.ok and d.estimate.method == "dpo" and d.estimate.tokens == 10_000
    tight = LaunchSettings(budget_gpu_hours_per_run=1e-9)
    assert not budget_for_dataset(tmp_path, "dpo", None, tight).ok
    with pytest.raises(ConfigError, match=r"no sft\.jsonl"):
        budget_for_dataset(tmp_path, "sft", None, LaunchSettings())


def test_grpo_sampling_follows_the_train_config(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"method": "grpo"}))
    (tmp_path / "grpo.jsonl").write_text('{"prompt": "p"}\n' * 10)
    small = budget_for_dataset(tmp_path, "grpo", None, LaunchSettings())
    big = budget_for_dataset(
        tmp_path, "grpo", None, LaunchSettings(train_config={"num_generations": 16})
    )
    assert big.estimate.flops > 3 * small.estimate.flops
