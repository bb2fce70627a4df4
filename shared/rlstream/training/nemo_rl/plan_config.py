"""TrainConfig -> the NeMo RL config a plan writes: the pinned tag's example config for the
method (``grpo_math_1B.yaml``; ``ppo_math_1B.yaml`` for PPO) with rlstream's values on top,
every key checked against the committed manifest.

The values: one node, one GPU; LoRA (``policy.dtensor_cfg.lora_cfg``); the dataset as a
``ResponseDataset`` read by the adapter's processor and graded by its environment; no
validation (the dataset holds its evaluation tasks out). ``batch_size`` counts sequences as
on the builtin backend: ``batch_size // num_generations`` prompts per step. GSPO is NeMo
RL's GRPO loss with ``sequence_level_importance_ratios`` and ``token_level_loss: false``
(its loss docstring) and the paper's clip range. ``--backend-arg=--dotted.key=value``
overrides any key (YAML value); unknown keys are refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from rlstream.errors import ConfigError
from rlstream.training.config import TrainConfig, effective
from rlstream.training.nemo_rl import adapter
from rlstream.training.nemo_rl.pin import NEMO_RL_TAG, base, check_key

#: the converted dataset the config names, next to it in the plan folder
DATA_FILE = "train.jsonl"
#: rlstream's own keys: its environment's section (the environment name is rlstream's)
OWNED = frozenset({f"env.{adapter.ENV_NAME}", f"env.{adapter.ENV_NAME}.num_workers"})
#: NeMo RL's example script per method
ENTRY = {"grpo": "run_grpo.py", "gspo": "run_grpo.py", "ppo": "run_ppo.py"}
#: GSPO (Zheng et al. 2025, v2 section 5.1) in NeMo RL's loss config
GSPO_LOSS = {
    "loss_fn.sequence_level_importance_ratios": True,
    "loss_fn.token_level_loss": False,
    "loss_fn.ratio_clip_min": 3e-4,
    "loss_fn.ratio_clip_max": 4e-4,
}


def _values(method: str, config: TrainConfig, model: str, out: Path, rows: int) -> dict[str, Any]:
    ns = "ppo" if method == "ppo" else "grpo"
    lr, beta = effective(config)
    gens = config.num_generations
    prompts = max(1, config.batch_size // gens)
    epochs = max(1, math.ceil(config.max_steps * prompts / max(1, rows)))
    values: dict[str, Any] = {
        f"{ns}.num_prompts_per_step": prompts,
        f"{ns}.num_generations_per_prompt": gens,
        f"{ns}.max_num_steps": config.max_steps,
        f"{ns}.max_num_epochs": epochs,
        f"{ns}.seed": config.seed,
        f"{ns}.val_period": 0,
        f"{ns}.val_at_start": False,
        f"{ns}.val_at_end": False,
        # the examples' overlong penalty assumes long maths answers; rewards stay the spec's
        f"{ns}.reward_shaping.enabled": False,
        "policy.model_name": model,
        "policy.train_global_batch_size": prompts * gens,
        "policy.train_micro_batch_size": 1,
        "policy.max_total_sequence_length": config.max_length + config.max_new_tokens,
        "policy.generation.max_new_tokens": config.max_new_tokens,
        "policy.generation.temperature": config.temperature,
        "policy.optimizer.kwargs.lr": lr,
        "policy.dtensor_cfg.lora_cfg.enabled": True,
        "policy.dtensor_cfg.lora_cfg.dim": config.lora_rank,
        "policy.dtensor_cfg.lora_cfg.alpha": config.lora_alpha,
        "policy.dtensor_cfg.lora_cfg.dropout": config.lora_dropout,
        "loss_fn.reference_policy_kl_penalty": beta,
        "checkpointing.checkpoint_dir": str(out / "results"),
        "checkpointing.metric_name": None,
        "checkpointing.save_period": config.max_steps,
        "logger.log_dir": str(out / "logs"),
        "data.train.dataset_name": "ResponseDataset",
        "data.train.data_path": str(out / DATA_FILE),
        "data.train.split_validation_size": 0,
        "data.validation": None,
        "data.default.processor": adapter.PROCESSOR_NAME,
        "data.default.env_name": adapter.ENV_NAME,
        "data.default.prompt_file": None,
        "data.default.system_prompt_file": None,
        f"env.{adapter.ENV_NAME}.num_workers": 1,
        "cluster.gpus_per_node": 1,
        "cluster.num_nodes": 1,
    }
    if method == "ppo":  # the critic learns at the policy's rate; the KL needs the reference
        values["value.optimizer.kwargs.lr"] = lr
        values["ppo.skip_reference_policy_logprobs_calculation"] = beta == 0
    if method == "gspo":
        values |= GSPO_LOSS
    return values


def parse_backend_args(args: Sequence[str]) -> dict[str, Any]:
    """``--policy.max_grad_norm=0.5`` -> {"policy.max_grad_norm": 0.5} (YAML values)."""
    out: dict[str, Any] = {}
    for raw in args:
        if not raw.startswith("--") or "=" not in raw:
            raise ConfigError(f"backend arg {raw!r}: expected --dotted.key=value")
        key, _, text = raw[2:].partition("=")
        try:
            out[key] = yaml.safe_load(text) if text else None
        except yaml.YAMLError as exc:
            raise ConfigError(f"backend arg {raw!r}: the value is not YAML ({exc})") from exc
    return out


def _set(flat: dict[str, Any], key: str, value: Any) -> None:
    """Set a dotted key, replacing the section below it (and any leaf above it)."""
    for k in [k for k in flat if k.startswith(f"{key}.")]:
        del flat[k]
    parts = key.split(".")
    for i in range(1, len(parts)):
        flat.pop(".".join(parts[:i]), None)
    flat[key] = value


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    """Dotted keys -> nested mappings, in key order."""
    root: dict[str, Any] = {}
    for key, value in flat.items():
        node = root
        *heads, last = key.split(".")
        for h in heads:
            node = node.setdefault(h, {})
        node[last] = value
    return root


def build(method: str, config: TrainConfig, model: str, out: Path, rows: int) -> dict[str, Any]:
    """The full config (nested) for a run over ``rows`` prompts, with its files in ``out``;
    every key rlstream or ``--backend-arg`` sets is checked."""
    if method not in ENTRY:
        raise ConfigError(
            f"the nemo-rl plan generator writes GRPO, GSPO and PPO configs, not {method}; "
            "use --backend builtin for sft/dpo"
        )
    if config.environment is not None:
        raise ConfigError(
            "the nemo-rl plan generator does not plan environment (multi-turn) runs; "
            "drop --environment or use --backend builtin|openrlhf"
        )
    flat = base(method)
    values = _values(method, config, model, out, rows) | parse_backend_args(config.backend_args)
    for key, value in values.items():
        check_key(key, OWNED)
        _set(flat, key, value)
    return nest(flat)


def render(method: str, tree: dict[str, Any]) -> str:
    """The YAML text, headed by what it is and that it was not run here."""
    head = (
        f"# NeMo RL {NEMO_RL_TAG} config generated by rlstream for {method}: a PLAN, not run or\n"
        "# tested end to end by rlstream. Keys checked against the example configs of that\n"
        f"# tag; run with examples/{ENTRY[method]} through {adapter.FILE_NAME}.\n"
    )
    return head + yaml.safe_dump(tree, sort_keys=False, default_flow_style=False, width=100)
