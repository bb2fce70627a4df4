"""One TRL run: model + tokenizer, dataset, trainer, LoRA, train, save the adapter."""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlstream.environments.trl_adapter import EpisodeRollout, environment_reward
from rlstream.errors import ConfigError
from rlstream.grading import SpecResolver
from rlstream.training.builtin.fit import fit_sft_rows
from rlstream.training.builtin.multiturn import environment_rows
from rlstream.training.builtin.recorder import Recorder, finite
from rlstream.training.builtin.rows import as_prompt_completion, one_turn_rows, trl_rows
from rlstream.training.builtin.trl_args import TRAINER_CLASSES, config_class
from rlstream.training.chat import training_template
from rlstream.training.config import Progress, TrainConfig, method_of
from rlstream.training.reward import GrpoReward, gradeable

#: the methods TRL's GRPOTrainer runs (GSPO: sequence-level importance ratios)
GROUP_METHODS = ("grpo", "gspo")


def lora_config(config: TrainConfig) -> Any:
    from peft import LoraConfig

    return LoraConfig(
        r=config.lora_rank,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )


def load_tokenizer(base_model: str | Path) -> Any:
    """The base model's tokenizer with the training chat template."""
    from transformers import AutoTokenizer

    tok: Any = AutoTokenizer.from_pretrained(str(base_model))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.chat_template = training_template(tok)
    return tok


def load_model(base_model: str | Path, device: str, bf16: bool) -> Any:
    """The base model, float32 on CPU."""
    import torch
    from transformers import AutoModelForCausalLM

    dtype = torch.bfloat16 if bf16 else torch.float32
    model: Any = AutoModelForCausalLM.from_pretrained(str(base_model), dtype=dtype)
    model.to(device)
    return model


def build_trainer(
    config: TrainConfig,
    data_rows: Sequence[dict[str, Any]],
    model: Any,
    tok: Any,
    kwargs: dict[str, Any],
    recorder: Recorder,
    rollout: EpisodeRollout | None = None,
) -> tuple[Any, GrpoReward | None]:
    """The TRL trainer over ``data_rows`` (already in TRL's columns, :func:`trl_rows`)."""
    import trl
    from datasets import Dataset
    from transformers import PrinterCallback

    specs = SpecResolver(config_path=Path(config.reward_config) if config.reward_config else None)
    data = Dataset.from_list(list(data_rows))
    args = config_class(config.method)(**kwargs)
    common: dict[str, Any] = {
        "model": model,
        "args": args,
        "train_dataset": data,
        "processing_class": tok,
        "peft_config": lora_config(config),
        "callbacks": [recorder],
    }
    reward = None
    if rollout is not None:  # multi-turn: whole episodes, the environment's reward
        common["reward_funcs"] = [environment_reward]
        common["rollout_func"] = rollout
    elif config.method in GROUP_METHODS:
        reward = GrpoReward(specs)
        common["reward_funcs"] = [reward]
    trainer = getattr(trl, TRAINER_CLASSES[config.method])(**common)
    # with tqdm off, transformers prints every log dict to stdout; the Recorder reports them
    trainer.remove_callback(PrinterCallback)
    return trainer, reward


def run_trl(
    config: TrainConfig,
    rows: Sequence[dict[str, Any]],
    base_model: str | Path,
    kwargs: dict[str, Any],
    device: str,
    adapter_dir: Path,
    progress: Progress | None,
) -> dict[str, Any]:
    """Train and save; returns the numbers metrics.json reports (``reason`` on failure)."""
    from transformers import set_seed

    t0 = time.perf_counter()
    skipped: dict[str, int] = {}
    rollout: EpisodeRollout | None = None
    if config.method in GROUP_METHODS and config.environment is not None:
        rows, rollout, skipped = environment_rows(config, rows)
    elif config.method in GROUP_METHODS:
        specs = SpecResolver(
            config_path=Path(config.reward_config) if config.reward_config else None
        )
        rows, skipped = gradeable(rows, specs)
        if not rows:
            raise ConfigError(f"no GRPO row can be graded on fresh samples: {skipped}")
    tok = load_tokenizer(base_model)
    data_rows = rows if rollout is not None else trl_rows(method_of(config), rows)
    row_fit: dict[str, int] = {}
    if config.method == "sft":
        # before the model loads: a run with no row that fits stops here, saying why
        data_rows, row_fit = fit_sft_rows(tok, data_rows, config.max_length)
        if one_turn_rows(rows):
            data_rows = as_prompt_completion(data_rows)
    set_seed(config.seed)
    model = load_model(base_model, device, bool(kwargs.get("bf16")))
    recorder = Recorder(progress)
    with warnings.catch_warnings():
        # peft 0.21 and TRL 1.16 read transformers' deprecated ``is_gradient_checkpointing``
        # alias: not ours to fix, and warnings-as-errors (pytest here) would stop every run
        warnings.filterwarnings("ignore", ".*is_gradient_checkpointing.*", FutureWarning)
        # TRL marks rollout_func experimental: we pin TRL and test the hook we use
        warnings.filterwarnings("ignore", ".*'rollout_func'.*experimental.*", UserWarning)
        trainer, reward = build_trainer(config, data_rows, model, tok, kwargs, recorder, rollout)
        load_s = time.perf_counter() - t0
        trainer.train()
    losses = recorder.losses()
    out: dict[str, Any] = {
        "steps": int(trainer.state.global_step),
        "tokens": recorder.tokens(),
        "train_seconds": recorder.seconds,
        "train_cpu_seconds": recorder.cpu_seconds,
        "load_seconds": load_s,
        "curve": recorder.curve,
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "skipped_rows": skipped,
        "row_fit": row_fit,
    }
    if reward is not None:
        out["reward"] = {
            "samples": reward.calls,
            "passed": reward.passed,
            "errors": reward.errors,
            "last_error": reward.last_error,
        }
    if rollout is not None:
        out["environment"] = {"name": config.environment, **rollout.stats.summary()}
    if not finite(losses):
        out["reason"] = f"the loss is not finite: {losses}"
        return out
    trainer.model.save_pretrained(str(adapter_dir))
    tok.save_pretrained(str(adapter_dir))
    return out
