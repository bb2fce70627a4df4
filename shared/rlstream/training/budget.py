"""Cost and time ceiling, checked before a run is launched.

The estimate is the usual dense-transformer FLOPs count, deliberately simple and
conservative (LoRA saves optimizer memory, not backward FLOPs, so it is not discounted):

    train FLOPs  = 6 * N * tokens                  (forward + backward, SFT)
    DPO          = 8 * N * tokens                  (+ a forward of the frozen reference)
    GRPO         = 8 * N * (G * (P + C))           (policy + reference over G samples)
                 + 2 * N * G * C * DECODE_PENALTY  (sampling the G completions)
    GPU-hours    = FLOPs / (peak_tflops * 1e12 * mfu) / 3600

N is the parameter count (read from the model's safetensors headers, its name like
``Qwen2.5-7B``, or ``RLSTREAM_BUDGET_MODEL_PARAMS``), tokens ~= dataset bytes / 4 (the
JSONL of the method's file: markup included, which over- rather than under-counts),
P prompt tokens and C = max_new_tokens per sample, G = num_generations per prompt,
DECODE_PENALTY = 3 because token-by-token sampling runs far below peak FLOPs.
A run is refused when its estimate exceeds the per-run budget, when it would take the
last 24 hours' launched estimates over the per-day budget, or when its wall time on the
configured GPUs would exceed the Job's hard deadline (``k8s_active_deadline_s``).
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from rlstream.errors import ConfigError
from rlstream.launch.settings import LaunchSettings

DEFAULT_PARAMS = 134_515_008.0  # SmolLM2-135M-Instruct, the default base model
BYTES_PER_TOKEN = 4.0
DECODE_PENALTY = 3.0
FILES = {"sft": "sft.jsonl", "dpo": "dpo.jsonl", "grpo": "grpo.jsonl"}


class Estimate(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str
    params: float
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


def estimate_gpu_hours(
    *,
    method: str,
    tokens: int,
    params: float,
    rows: int = 0,
    num_generations: int = 4,
    max_new_tokens: int = 64,
    gpu_peak_tflops: float = 312.0,
    mfu: float = 0.3,
    gpus: int = 1,
) -> Estimate:
    """GPU-hours for one pass over ``tokens`` (see the module docstring for the formula)."""
    if method == "sft":
        flops = 6.0 * params * tokens
    elif method == "dpo":
        flops = 8.0 * params * tokens
    elif method == "grpo":
        completions = rows * num_generations * max_new_tokens
        flops = 8.0 * params * (tokens * num_generations + completions)
        flops += 2.0 * params * completions * DECODE_PENALTY
    else:
        raise ConfigError(f"no estimate for method {method!r} (sft, dpo or grpo)")
    gpu_hours = flops / (gpu_peak_tflops * 1e12 * mfu) / 3600.0
    return Estimate(
        method=method,
        params=params,
        tokens=tokens,
        flops=flops,
        gpu_hours=gpu_hours,
        wall_hours=gpu_hours / max(1, gpus),
        gpus=gpus,
    )


def resolve_method(dataset_dir: Path, method: str) -> str:
    """``auto`` -> the manifest's recommendation (sft when it recommends none)."""
    if method in FILES:
        return method
    data = json.loads((dataset_dir / "manifest.json").read_text())
    recommended = str(data.get("method") or "sft")
    return recommended if recommended in FILES else "sft"


def dataset_tokens(dataset_dir: Path, method: str) -> tuple[int, int]:
    """(approximate tokens, rows) of the method's file in a dataset folder."""
    path = dataset_dir / FILES[method]
    if not path.exists():
        raise ConfigError(f"{dataset_dir} has no {FILES[method]} for method {method}")
    size = path.stat().st_size
    with path.open("rb") as f:
        rows = sum(1 for line in f if line.strip())
    return int(size / BYTES_PER_TOKEN), rows


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


def budget_for_dataset(
    dataset_dir: Path,
    method: str = "auto",
    model: str | Path | None = None,
    settings: LaunchSettings | None = None,
    spent_today: float = 0.0,
    num_generations: int | None = None,
    max_new_tokens: int | None = None,
) -> BudgetDecision:
    """What ``rlstream train`` and the curator ask before starting a run. GRPO's
    ``num_generations``/``max_new_tokens`` default to ``RLSTREAM_TRAIN_CONFIG``'s, else
    TrainConfig's defaults."""
    from rlstream.training.config import TrainConfig

    s = settings or LaunchSettings()
    defaults = TrainConfig()
    cfg = s.train_config
    if num_generations is None:
        num_generations = int(str(cfg.get("num_generations", defaults.num_generations)))
    if max_new_tokens is None:
        max_new_tokens = int(str(cfg.get("max_new_tokens", defaults.max_new_tokens)))
    m = resolve_method(Path(dataset_dir), method)
    tokens, rows = dataset_tokens(Path(dataset_dir), m)
    est = estimate_gpu_hours(
        method=m,
        tokens=tokens,
        params=model_params(model, s.budget_model_params),
        rows=rows,
        num_generations=num_generations,
        max_new_tokens=max_new_tokens,
        gpu_peak_tflops=s.budget_gpu_peak_tflops,
        mfu=s.budget_mfu,
        gpus=max(1, s.k8s_gpus),
    )
    return check_budget(est, s, spent_today)
