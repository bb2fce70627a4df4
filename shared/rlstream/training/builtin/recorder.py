"""Per-step metrics from TRL's logs: the curve for metrics.json and the progress callback."""

from __future__ import annotations

import math
import time
from typing import Any

from transformers import TrainerCallback

from rlstream.training.config import Progress

#: what goes into each step of the curve when the trainer logs it
CURVE_KEYS = (
    "loss",
    "grad_norm",
    "learning_rate",
    "num_tokens",
    "reward",
    "reward_std",
    "frac_reward_zero_std",
    "rewards/chosen",
    "rewards/rejected",
    "rewards/accuracies",
    "rewards/margins",
    "mean_token_accuracy",
    "completions/mean_length",
    "kl",
    "entropy",
)


class Recorder(TrainerCallback):
    """Collects TRL's per-step logs; times the steps (model loading excluded)."""

    def __init__(self, progress: Progress | None = None) -> None:
        self.progress = progress
        self.curve: list[dict[str, float]] = []
        self.summary: dict[str, float] = {}
        self.started = 0.0
        self.finished = 0.0
        self.cpu_started = 0.0
        self.cpu_finished = 0.0

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.started = time.perf_counter()
        self.cpu_started = time.process_time()

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.finished = time.perf_counter()
        self.cpu_finished = time.process_time()

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        logs = logs or {}
        if "train_runtime" in logs:  # the closing summary, not a step
            self.summary = {k: float(v) for k, v in logs.items() if _number(v)}
            return
        point = {k: float(logs[k]) for k in CURVE_KEYS if k in logs and _number(logs[k])}
        if point:
            point["step"] = float(state.global_step)
            self.curve.append(point)
        if self.progress is not None:
            self.progress(int(state.global_step), int(state.max_steps), point)

    @property
    def seconds(self) -> float:
        return max(0.0, (self.finished or time.perf_counter()) - self.started)

    @property
    def cpu_seconds(self) -> float:
        """CPU seconds of this process while training (all its threads)."""
        return max(0.0, (self.cpu_finished or time.process_time()) - self.cpu_started)

    def tokens(self) -> int:
        seen = [p["num_tokens"] for p in self.curve if "num_tokens" in p]
        return int(max(seen)) if seen else 0

    def losses(self) -> list[float]:
        return [p["loss"] for p in self.curve if "loss" in p]


def _number(v: Any) -> bool:
    """A number, NaN included (a NaN loss must reach the finiteness check)."""
    return isinstance(v, int | float) and not isinstance(v, bool)


def finite(values: list[float]) -> bool:
    return all(math.isfinite(v) for v in values)
