"""verl's batch arithmetic and startup checks, made before any GPU is held.

Each check names the verl 0.9.1 code it mirrors: ``trainer/ppo/v1/trainer_base.py`` (the
step count), ``utils/config.py::validate_config`` and ``workers/config/actor.py`` /
``critic.py`` (``validate``), and ``trainer/ppo/utils.py`` (when a critic and a reference
model are used). The adapter's own needs follow: a LoRA adapter, a final checkpoint.
"""

from __future__ import annotations

from typing import Any

from rlstream.training.verl.keys import OverrideError, effective
from rlstream.training.verl.overrides import ACTOR, GROUP_ESTIMATORS, REF, ROLLOUT


class _Get:
    def __init__(self, parsed: dict[str, Any]) -> None:
        self.parsed = parsed

    def __call__(self, key: str) -> Any:
        return effective(self.parsed, key)

    def int(self, key: str) -> int:
        value = self(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise OverrideError(f"{key} must be an integer, got {value!r}")
        return value


def steps(get: _Get, rows: int) -> int:
    """``min(total_training_steps, rows // train_batch_size * total_epochs)``, refused at 0."""
    n = get.int(f"{ROLLOUT}.n")
    if get("algorithm.adv_estimator") in GROUP_ESTIMATORS and n <= 1:
        raise OverrideError(f"{get('algorithm.adv_estimator')} needs {ROLLOUT}.n > 1 (got {n})")
    cap = get.int("data.train_max_samples")
    rows = min(rows, cap) if cap > 0 else rows
    if rows <= 0:
        raise OverrideError("the dataset has no prompts to train on")
    batch = get.int("data.train_batch_size")
    if batch <= 0 or rows < batch:
        raise OverrideError(
            f"data.train_batch_size {batch} exceeds the {rows} prompts: verl's drop-last "
            "dataloader would plan 0 steps"
        )
    planned = rows // batch * get.int("trainer.total_epochs")
    total = get("trainer.total_training_steps")
    if total is not None:
        planned = min(planned, int(total))
    if planned <= 0:
        raise OverrideError("these overrides plan 0 optimiser steps")
    return planned


def _micro(get: _Get, section: str, name: str) -> int | None:
    """Exactly one of ``<name>`` / ``<name>_per_gpu`` (validate_config's rule)."""
    legacy, per_gpu = get(f"{section}.{name}"), get(f"{section}.{name}_per_gpu")
    if (legacy is None) == (per_gpu is None):
        raise OverrideError(f"set exactly one of {section}.{name} and {section}.{name}_per_gpu")
    return int(per_gpu) if per_gpu is not None else None


def _mini(get: _Get, section: str, batch: int, n: int, gpus: int) -> None:
    """``train_batch_size >= ppo_mini_batch_size``; the per-GPU mini batch (x n samples)
    a positive multiple of the micro batch."""
    mini = get.int(f"{section}.ppo_mini_batch_size")
    if batch < mini:
        raise OverrideError(f"data.train_batch_size {batch} < {section}.ppo_mini_batch_size {mini}")
    micro = _micro(get, section, "ppo_micro_batch_size")
    per_gpu = mini * n // gpus
    if per_gpu <= 0 or (micro is not None and per_gpu % micro):
        raise OverrideError(
            f"{section}: the mini batch per GPU ({mini} x {n} samples / {gpus} GPUs = "
            f"{per_gpu}) is not a positive multiple of its micro batch per GPU ({micro})"
        )


def placement(get: _Get) -> None:
    """validate_config's batch checks, and what the adapter needs to save an adapter."""
    gpus = get.int("trainer.n_gpus_per_node") * get.int("trainer.nnodes")
    batch, n = get.int("data.train_batch_size"), get.int(f"{ROLLOUT}.n")
    if gpus <= 0 or (batch * n) % gpus:
        raise OverrideError(f"{batch} prompts x {n} samples is not divisible by {gpus} GPUs")
    if gpus % get.int(f"{ROLLOUT}.tensor_model_parallel_size"):
        raise OverrideError(f"{gpus} GPUs are not a multiple of the rollout's tensor parallelism")
    if get(f"{ROLLOUT}.name") in (None, "???"):
        raise OverrideError(f"{ROLLOUT}.name must name the rollout engine (vllm)")
    critic = get("critic.enable")
    use_critic = bool(critic) if critic is not None else get("algorithm.adv_estimator") == "gae"
    use_ref = bool(get("algorithm.use_kl_in_reward")) or bool(get(f"{ACTOR}.use_kl_loss"))
    if not get(f"{ACTOR}.use_dynamic_bsz"):
        _mini(get, ACTOR, batch, n, gpus)
        _micro(get, ROLLOUT, "log_prob_micro_batch_size")
        if use_ref:
            _micro(get, REF, "log_prob_micro_batch_size")
    if use_critic and not get("critic.use_dynamic_bsz"):
        _mini(get, "critic", batch, n, gpus)
    if get(f"{ROLLOUT}.val_kwargs.do_sample") and float(get(f"{ROLLOUT}.temperature")) <= 0:
        raise OverrideError("sampled validation needs a rollout temperature > 0")
    if get.int("actor_rollout_ref.model.lora_rank") <= 0:
        raise OverrideError("the run saves a LoRA adapter: actor_rollout_ref.model.lora_rank > 0")
    if get.int("trainer.save_freq") <= 0:
        raise OverrideError("trainer.save_freq must be > 0: the adapter comes from a checkpoint")


def last_step_saves(get: _Get, planned: int) -> None:
    """verl saves at ``is_last_step`` (``global_steps >= total_training_steps``) or every
    ``save_freq`` steps; a run the epochs end first must still end on a saved step."""
    total = get("trainer.total_training_steps")
    if total is not None and planned < int(total) and planned % get.int("trainer.save_freq"):
        raise OverrideError(
            f"the run ends after {planned} steps (its epochs) before total_training_steps "
            f"{total}, on no multiple of trainer.save_freq {get('trainer.save_freq')}: it "
            "would save no checkpoint to take the adapter from"
        )


def check_batches(parsed: dict[str, Any], rows: int) -> tuple[int, bool]:
    """(planned optimiser steps, whether a critic trains); refuses what verl would."""
    get = _Get(parsed)
    planned = steps(get, rows)
    placement(get)
    last_step_saves(get, planned)
    critic = get("critic.enable")
    return planned, bool(critic) if critic is not None else get("algorithm.adv_estimator") == "gae"
