"""Training: a curated dataset folder -> a LoRA adapter, metrics and lineage.

Backends: ``builtin`` (TRL + peft, CPU or one GPU), and ``openrlhf`` and ``verl`` (external
commands in a pinned GPU image). Heavy libraries load only when a backend trains.
"""

from rlstream.training.backend import BACKENDS, Backend, get_backend
from rlstream.training.basemodel import (
    BASE_MODEL_ID,
    BaseModelError,
    default_models_dir,
    ensure_base_model,
    load_causal_lm,
)
from rlstream.training.config import (
    RL_METHODS,
    MethodChoice,
    Progress,
    RunResult,
    TrainConfig,
    TrainingError,
    TrainMethod,
    TrainPlan,
    run_id_for,
)
from rlstream.training.run import ADAPTER_DIR, METRICS_FILE, RUN_FILE, plan, train

__all__ = [
    "ADAPTER_DIR",
    "BACKENDS",
    "BASE_MODEL_ID",
    "METRICS_FILE",
    "RL_METHODS",
    "RUN_FILE",
    "Backend",
    "BaseModelError",
    "MethodChoice",
    "Progress",
    "RunResult",
    "TrainConfig",
    "TrainMethod",
    "TrainPlan",
    "TrainingError",
    "default_models_dir",
    "ensure_base_model",
    "get_backend",
    "load_causal_lm",
    "plan",
    "run_id_for",
    "train",
]
