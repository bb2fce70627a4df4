"""verl backend: a fail-closed adapter for exactly one pinned release (pin.py).

It never imports verl (CUDA-only: vLLM, flash-attn, Ray): it checks every Hydra override
of ``python3 -m verl.trainer.main_ppo`` against the key manifest extracted from that
release's own config YAML, and writes the JSONL rows and the total, hash-pinned reward
file (``reward.custom_reward_function``) the run reads, for GRPO, GSPO and PPO.

``VerlBackend`` loads on first use, so the reward file's runtime (``reward_runtime``,
imported inside the training pod) pulls in no planning code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlstream.training.verl.pin import VERL_VERSION

if TYPE_CHECKING:
    from rlstream.training.verl.backend import VerlBackend

__all__ = ["VERL_VERSION", "VerlBackend"]


def __getattr__(name: str) -> Any:
    if name == "VerlBackend":
        from rlstream.training.verl.backend import VerlBackend

        return VerlBackend
    raise AttributeError(name)
