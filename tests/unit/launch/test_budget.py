"""The GPU-hour estimate (documented formula over the run's TrainConfig) and the per-run /
per-day / time ceilings."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest

from rlstream.errors import ConfigError
from rlstream.launch import LaunchSettings
from rlstream.launch.budget import (
    DEFAULT_PARAMS,
    budget_for_run,
    check_budget,
    estimate_run,
    model_params,
    planned_steps,
)
from rlstream.training import TrainConfig, TrainingError

pytestmark = pytest.mark.unit

HW = {"params": 1e9, "gpu_peak_tflops": 100.0, "mfu": 0.5}


def _cfg(**kw: object) -> TrainConfig:
    base: dict[str, object] = {"max_steps": 10, "batch_size": 4, "max_length": 256}
    return TrainConfig.model_validate({**base, **kw})


def test_formula_counts_what_the_trainer_runs() -> None:
    # steps x batch x grad_acc sequences of max_length tokens, not the file's bytes
    sft = estimate_run(_cfg(method="sft", gradient_accumulation_steps=2), backend="builtin",
                       rows=3, **HW)  # fmt: skip
    q = 10 * 4 * 2
    assert (sft.steps, sft.sequences, sft.tokens) == (10, q, q * 256)
    assert sft.flops == 6 * 1e9 * q * 256
    assert sft.gpu_hours == pytest.approx(sft.flops / 5e13 / 3600)
    dpo = estimate_run(_cfg(method="dpo"), backend="builtin", rows=3, **HW)
    assert dpo.flops == 8 * 1e9 * 2 * 40 * 256  # chosen + rejected, + the reference forward
    grpo = estimate_run(
        _cfg(method="grpo", num_generations=4, max_new_tokens=64), backend="builtin", rows=3, **HW
    )
    assert grpo.flops == 8e9 * 40 * (256 + 64) + 2e9 * 40 * 64 * 3
    longer = estimate_run(_cfg(method="sft", max_steps=20), backend="builtin", rows=3, **HW)
    assert longer.gpu_hours == pytest.approx(2 * estimate_run(
        _cfg(method="sft"), backend="builtin", rows=3, **HW).gpu_hours)  # fmt: skip
    two = estimate_run(_cfg(method="sft"), backend="builtin", rows=3, gpus=2, **HW)
    assert two.wall_hours == pytest.approx(two.gpu_hours / 2)
    with pytest.raises(TrainingError, match="resolved"):
        estimate_run(_cfg(), backend="builtin", rows=3, **HW)


def test_steps_follow_backend_args_and_epochs() -> None:
    assert planned_steps(_cfg(method="sft"), "builtin", 100) == (10, 4)
    override = _cfg(method="sft", backend_args=("--max_steps=30",))
    assert planned_steps(override, "builtin", 100) == (30, 4)
    # openrlhf runs whole passes: 100 rows // 8 = 12 steps per pass, ceil(10 / 12) = 1 pass
    assert planned_steps(_cfg(method="sft", batch_size=8), "openrlhf", 100) == (12, 8)
    epochs = _cfg(method="dpo", batch_size=8, backend_args=("--train.max_epochs=3",))
    assert planned_steps(epochs, "openrlhf", 100) == (36, 8)
    # openrlhf GRPO: the batch counts prompts, each sampled num_generations times
    grpo = _cfg(method="grpo", batch_size=4, num_generations=4)
    assert planned_steps(grpo, "openrlhf", 10) == (math.ceil(10 / 2) * 2, 16)


def test_ceilings() -> None:
    s = LaunchSettings(
        budget_gpu_hours_per_run=2, budget_gpu_hours_per_day=5, k8s_active_deadline_s=3600
    )
    est = estimate_run(_cfg(method="sft"), backend="builtin", rows=1, params=1)
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


def test_budget_for_run_uses_the_settings_hardware() -> None:
    cfg = _cfg(method="grpo")
    ok = budget_for_run(cfg, rows=10, backend="builtin", model=None, settings=LaunchSettings())
    assert ok.ok and ok.estimate.params == DEFAULT_PARAMS
    tight = LaunchSettings(budget_gpu_hours_per_run=1e-9)
    assert not budget_for_run(cfg, rows=10, backend="builtin", model=None, settings=tight).ok
    big = budget_for_run(cfg.model_copy(update={"num_generations": 8, "batch_size": 8}),
                         rows=10, backend="builtin", model=None, settings=LaunchSettings())  # fmt: skip
    assert big.estimate.flops > 1.9 * ok.estimate.flops


def test_train_config_setting_is_checked_at_startup() -> None:
    s = LaunchSettings(train_config={"batch_size": 2}, train_max_steps=7)
    assert s.train_config_model() == TrainConfig(batch_size=2, max_steps=7)
    with pytest.raises(ValueError, match="batch_sz"):
        LaunchSettings(train_config={"batch_sz": 2})
