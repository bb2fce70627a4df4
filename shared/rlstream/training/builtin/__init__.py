"""The builtin backend: TRL (SFTTrainer, DPOTrainer, GRPOTrainer) + peft LoRA, in process,
on CPU or one GPU.

It writes ``adapter/`` (peft safetensors plus the tokenizer with the chat template it trained
with) and ``metrics.json`` (the per-step curve, steps, tokens/s, wall time).
"""

from __future__ import annotations

import importlib.metadata
import time
from pathlib import Path
from typing import Any

import orjson

from rlstream.errors import ConfigError, RlstreamError
from rlstream.training.builtin.trl_args import TRAINER_CLASSES, as_argv, trl_kwargs
from rlstream.training.config import Progress, RunResult, TrainConfig, TrainPlan, method_of
from rlstream.training.data import METHOD_FILES, train_rows

METRICS_FILE = "metrics.json"
ADAPTER_DIR = "adapter"


def _dist_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


class BuiltinBackend:
    """TRL in this process. ``plan`` needs TRL only to check ``--backend-arg`` names."""

    name = "builtin"

    def version(self) -> str:
        return (
            f"trl=={_dist_version('trl')} peft=={_dist_version('peft')} "
            f"transformers=={_dist_version('transformers')} torch=={_dist_version('torch')}"
        )

    def plan(
        self, dataset_dir: Path, base_model: str | Path, config: TrainConfig, output_dir: Path
    ) -> TrainPlan:
        method = method_of(config)
        device = _device(config.device, probe=False)
        kwargs = _kwargs(config, output_dir, device)
        rows = len(train_rows(dataset_dir, config))
        return TrainPlan.of(
            self.name,
            method,
            (dataset_dir, base_model, output_dir),
            as_argv(kwargs),
            {
                "trainer": f"trl.{TRAINER_CLASSES[method]}",
                "rows": rows,
                "file": METHOD_FILES[method],
                "device": device,
                "lora": {"r": config.lora_rank, "alpha": config.lora_alpha},
                "max_steps": config.max_steps,
                **({"on_policy": config.on_policy} if config.on_policy else {}),
            },
        )

    def train(
        self,
        dataset_dir: Path,
        base_model: str | Path,
        config: TrainConfig,
        output_dir: Path,
        progress: Progress | None = None,
    ) -> RunResult:
        from rlstream.training.builtin.run_trl import run_trl

        t0 = time.perf_counter()
        device = _device(config.device, probe=True)
        method = method_of(config)
        rows = train_rows(dataset_dir, config)
        kwargs = _kwargs(config, output_dir, device)
        output_dir.mkdir(parents=True, exist_ok=True)
        adapter = output_dir / ADAPTER_DIR
        try:
            outcome = run_trl(config, rows, base_model, kwargs, device, adapter, progress)
        except ConfigError:
            raise
        except (RlstreamError, RuntimeError, ValueError, OSError) as exc:
            outcome = {"reason": f"{type(exc).__name__}: {exc}"}
        metrics = _metrics(outcome, config, device, time.perf_counter() - t0)
        (output_dir / METRICS_FILE).write_bytes(
            orjson.dumps(metrics, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
        )
        reason = outcome.get("reason")
        return RunResult(
            run_id=output_dir.name,
            status="failed" if reason else "succeeded",
            backend=self.name,
            method=method,
            output_dir=str(output_dir),
            adapter_dir=None if reason else str(adapter),
            steps=int(outcome.get("steps", 0)),
            reason=reason,
            metrics={k: v for k, v in metrics.items() if k != "curve"},
        )


def _kwargs(config: TrainConfig, output_dir: Path, device: str) -> dict[str, Any]:
    try:
        return trl_kwargs(config, output_dir, device, bf16=device == "cuda" and _bf16())
    except ImportError as exc:
        raise ConfigError(f"the builtin backend needs the train extra ({exc})") from exc


def _bf16() -> bool:
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())


def _device(requested: str, probe: bool) -> str:
    """ "auto" -> cuda when torch sees a GPU. ``probe=False`` (dry runs) avoids importing
    torch when the answer does not matter."""
    if requested != "auto":
        if requested == "cuda" and probe:
            import torch

            if not torch.cuda.is_available():
                raise ConfigError("device cuda requested but torch sees no GPU")
        return requested
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def _metrics(
    outcome: dict[str, Any], config: TrainConfig, device: str, wall: float
) -> dict[str, Any]:
    train_s = float(outcome.get("train_seconds", 0.0))
    tokens = int(outcome.get("tokens", 0))
    return {
        "method": config.method,
        "device": device,
        "steps": int(outcome.get("steps", 0)),
        "tokens": tokens,
        "tokens_per_second": round(tokens / train_s, 2) if train_s > 0 else 0.0,
        "train_seconds": round(train_s, 3),
        "train_cpu_seconds": round(float(outcome.get("train_cpu_seconds", 0.0)), 3),
        "load_seconds": round(float(outcome.get("load_seconds", 0.0)), 3),
        "wall_seconds": round(wall, 3),
        "first_loss": outcome.get("first_loss"),
        "last_loss": outcome.get("last_loss"),
        "reward": outcome.get("reward", {}),
        "environment": outcome.get("environment", {}),
        "skipped_rows": outcome.get("skipped_rows", {}),
        "row_fit": outcome.get("row_fit", {}),
        "curve": outcome.get("curve", []),
        "reason": outcome.get("reason"),
    }
