"""OpenRLHF backend: a fail-closed adapter for exactly one pinned release (pin.py).

It never imports OpenRLHF (CUDA-only): it checks an argv against the flag manifest
extracted from the release's source for the CLI it runs (GRPO: ``python3 -m
openrlhf.cli.train_ppo_ray``, with a prompt JSONL and a total, hash-pinned reward file;
SFT/DPO: ``deepspeed --module openrlhf.cli.train_sft|train_dpo``) in the GPU image.

``OpenRLHFBackend`` loads on first use, so the reward file's runtime
(``reward_runtime``, imported inside the training pod) pulls in no planning code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlstream.training.openrlhf.pin import OPENRLHF_VERSION

if TYPE_CHECKING:
    from rlstream.training.openrlhf.backend import OpenRLHFBackend

__all__ = ["OPENRLHF_VERSION", "OpenRLHFBackend"]


def __getattr__(name: str) -> Any:
    if name == "OpenRLHFBackend":
        from rlstream.training.openrlhf.backend import OpenRLHFBackend

        return OpenRLHFBackend
    raise AttributeError(name)
