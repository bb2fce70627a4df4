"""Cost and time ceiling of a planned run, checked before anything is launched.

The estimate counts what the trainer will run, from the run's :class:`TrainConfig`, not
the dataset's size: a run of ``max_steps`` optimizer steps sees

    S  = steps        builtin (TRL): max_steps (a ``--max_steps=N`` backend arg wins)
                      verl: max_steps (``trainer.total_training_steps=N`` wins)
                      openrlhf: whole passes over the file, ceil(max_steps / per_pass)
                      x per_pass with per_pass = rows // (batch x grad_acc), times the
                      ``--train.max_epochs=E`` backend arg where one is given
    Q  = S x batch_size x gradient_accumulation_steps   sequences (GRPO/GSPO: completions;
                      openrlhf and verl GRPO/GSPO: S x min(rows, batch_size) x G, their
                      batch counts prompts; their PPO: G = 1, one sample per prompt)
    L  = max_length   tokens per sequence (rows are cut to it: an upper bound)

and the usual dense-transformer FLOPs (LoRA saves optimizer memory, not backward FLOPs):

    SFT   = 6 * N * Q * L                 (forward + backward)
    DPO   = 8 * N * 2Q * L                (chosen + rejected; + a frozen reference forward)
    GRPO  = 8 * N * Q * (L + C)           (policy + reference over prompt + completion)
          + 2 * N * Q * C * DECODE_PENALTY  (sampling; C = max_new_tokens)
    GSPO  = GRPO                          (the same passes; only the ratio is per sequence)
    PPO   = 16 * N * Q * (L + C)          (GRPO's 8, + the critic: a value forward for GAE
          + 2 * N * Q * C * DECODE_PENALTY   and its own forward + backward, 2 + 6)
    GPU-hours = FLOPs / (peak_tflops * 1e12 * mfu) / 3600,   wall = GPU-hours / gpus

N is the parameter count (the model's safetensors headers, its name like ``Qwen2.5-7B``,
or ``RLSTREAM_BUDGET_MODEL_PARAMS``), DECODE_PENALTY = 3 because token-by-token sampling
runs far below peak FLOPs. A run is refused when its estimate exceeds the per-run budget,
when it would take the last 24 hours' recorded estimates over the per-day budget, or when
its wall time would exceed the Job's hard deadline (``k8s_active_deadline_s``).
"""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from rlstream.errors import ConfigError
from rlstream.launch.settings import LaunchSettings
from rlstream.training.config import RL_METHODS, TrainConfig, method_of

DEFAULT_PARAMS = 134_515_008.0  # SmolLM2-135M-Instruct, the default base model
DECODE_PENALTY = 3.0


class Estimate(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str
    params: float
    steps: int
    sequences: int
    tokens: int
    flops: float
    gpu_hours: float
    wall_hours: float
    gpus: int


class BudgetDecision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    estimate: Estimate
    spent_today: float
    reason: str | None = None


def model_params(model: str | Path | None, fallback: float | None = None) -> float:
    """Parameter count: the setting, the default model, safetensors headers, or the name."""
    if fallback is not None:
        return fallback
    if model is None:
        return DEFAULT_PARAMS
    path = Path(model)
    if path.is_dir() and list(path.glob("*.safetensors")):
        return float(sum(_safetensors_params(f) for f in path.glob("*.safetensors")))
    m = re.search(r"(\d+(?:\.\d+)?)\s*([MBmb])(?![a-z])", Path(str(model)).name)
    if m:
        return float(m.group(1)) * (1e6 if m.group(2).lower() == "m" else 1e9)
    raise ConfigError(f"cannot tell the size of {model}; set RLSTREAM_BUDGET_MODEL_PARAMS")


def _safetensors_params(path: Path) -> int:
    """Element count from the header alone (8-byte length + JSON), no tensor is read."""
    with path.open("rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    n = 0
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        count = 1
        for d in meta["shape"]:
            count *= int(d)
        n += count
    return n


def _backend_arg(config: TrainConfig, name: str) -> float | None:
    """A numeric ``--name=value`` among the backend args (last one wins), else None."""
    found = None
    for raw in config.backend_args:
        key, _, value = raw.removeprefix("--").partition("=")
        if key.replace("-", "_") == name.replace("-", "_"):
            try:
                found = float(value)
            except ValueError as e:
                raise ConfigError(f"backend arg {raw!r}: {name} must be a number") from e
    return found


def planned_steps(config: TrainConfig, backend: str, rows: int) -> tuple[int, int]:
    """(optimizer steps, sequences per step) the backend runs for ``config`` on ``rows``."""
    method = method_of(config)
    per_step = config.batch_size * config.gradient_accumulation_steps
    if backend == "verl":  # max_steps exactly (rlstream.training.verl.overrides); RL only
        steps = _backend_arg(config, "trainer.total_training_steps")
        prompts = max(1, min(rows, config.batch_size))
        samples = 1 if method == "ppo" else config.num_generations
        return (int(steps) if steps and steps > 0 else config.max_steps), prompts * samples
    if backend != "openrlhf":
        steps = _backend_arg(config, "max_steps")
        return (int(steps) if steps and steps > 0 else config.max_steps), per_step
    if method in RL_METHODS:
        prompts = max(1, min(rows, config.batch_size))
        samples = 1 if method == "ppo" else config.num_generations
        per_pass, per_step = max(1, rows // prompts), prompts * samples
    else:
        per_pass = max(1, rows // per_step)
    epochs = _backend_arg(config, "train.max_epochs") or 1.0
    passes = math.ceil(config.max_steps / per_pass) * math.ceil(epochs)
    return passes * per_pass, per_step


def estimate_run(
    config: TrainConfig,
    *,
    backend: str,
    rows: int,
    params: float,
    gpu_peak_tflops: float = 312.0,
    mfu: float = 0.3,
    gpus: int = 1,
) -> Estimate:
    """GPU-hours of the run ``config`` describes (see the module docstring)."""
    method = method_of(config)
    steps, per_step = planned_steps(config, backend, rows)
    q, length = steps * per_step, config.max_length
    if method == "sft":
        flops, tokens = 6.0 * params * q * length, q * length
    elif method == "dpo":
        flops, tokens = 8.0 * params * 2 * q * length, 2 * q * length
    else:  # grpo, gspo, ppo: sample, then train on prompt + completion
        c = config.max_new_tokens
        tokens = q * (length + c)
        passes = 16.0 if method == "ppo" else 8.0
        flops = passes * params * tokens + 2.0 * params * q * c * DECODE_PENALTY
    gpu_hours = flops / (gpu_peak_tflops * 1e12 * mfu) / 3600.0
    return Estimate(
        method=method,
        params=params,
        steps=steps,
        sequences=q,
        tokens=tokens,
        flops=flops,
        gpu_hours=gpu_hours,
        wall_hours=gpu_hours / max(1, gpus),
        gpus=gpus,
    )


def check_budget(
    estimate: Estimate, settings: LaunchSettings, spent_today: float = 0.0
) -> BudgetDecision:
    s = settings
    reason = None
    if estimate.gpu_hours > s.budget_gpu_hours_per_run:
        reason = (
            f"estimated {estimate.gpu_hours:.2f} GPU-hours exceeds the per-run budget "
            f"of {s.budget_gpu_hours_per_run:g}"
        )
    elif spent_today + estimate.gpu_hours > s.budget_gpu_hours_per_day:
        reason = (
            f"estimated {estimate.gpu_hours:.2f} GPU-hours on top of {spent_today:.2f} "
            f"launched in the last 24 h exceeds the per-day budget of "
            f"{s.budget_gpu_hours_per_day:g}"
        )
    elif estimate.wall_hours * 3600 > s.k8s_active_deadline_s:
        reason = (
            f"estimated {estimate.wall_hours:.2f} h on {estimate.gpus} GPU(s) exceeds the "
            f"time ceiling of {s.k8s_active_deadline_s} s"
        )
    return BudgetDecision(
        ok=reason is None, estimate=estimate, spent_today=spent_today, reason=reason
    )


def budget_for_run(
    config: TrainConfig,
    *,
    rows: int,
    backend: str,
    model: str | Path | None,
    settings: LaunchSettings,
    spent_today: float = 0.0,
) -> BudgetDecision:
    """What the coordinator (curator, ``rlstream train --launcher kubernetes``) asks
    before it records and launches a run; ``config.method`` must be resolved."""
    s = settings
    est = estimate_run(
        config,
        backend=backend,
        rows=rows,
        params=model_params(model, s.budget_model_params),
        gpu_peak_tflops=s.budget_gpu_peak_tflops,
        mfu=s.budget_mfu,
        gpus=max(1, s.k8s_gpus),
    )
    return check_budget(est, s, spent_today)
