"""OpenRLHF backend: a fail-closed adapter for exactly one pinned release (pin.py).

It never imports OpenRLHF (CUDA-only): it checks an argv against the flag manifest
extracted from the release's source for the CLI it runs (GRPO: ``python3 -m
openrlhf.cli.train_ppo_ray``, with a prompt JSONL and a total, hash-pinned reward file;
SFT/DPO: ``deepspeed --module openrlhf.cli.train_sft|train_dpo``) in the GPU image.
"""

from rlstream.training.openrlhf.backend import OpenRLHFBackend
from rlstream.training.openrlhf.pin import OPENRLHF_VERSION

__all__ = ["OPENRLHF_VERSION", "OpenRLHFBackend"]
