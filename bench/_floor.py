"""An arithmetic floor for model throughput: FLOPs per token x tokens actually needed /
the machine's measured matmul rate, so a measured tokens/s reads against its limit.

The floor counts only the matmuls of a dense decoder (every linear layer, the LM head and
attention's two products); norms, activations, the softmax, the optimiser and Python are
left out, so real runs sit below it. The rate is one square float32 ``torch.mm`` measured
on this machine with the same thread count the bench uses, in FLOPs per CPU second.

* forward: ``2 * matmul weights`` per token, plus ``4 * layers * d_attn * context`` for
  QK^T and AV (``context`` = the positions the token attends to; causal rows average
  ``(L + 1) / 2``);
* LoRA training (frozen base): forward + the backward's input gradients, ``2x`` forward;
  the adapters' own products (rank 8: ~2% of the weights' here) are left out;
* full fine-tuning: ``3x`` forward (weight gradients too).

Used by ``train_throughput.py``; ``eval_throughput.py`` may use :func:`forward_flops` for
generation (prefill and decode are forward passes).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: backward cost on top of the forward, by what is trained
TRAIN_MULTIPLIER = {"lora": 2.0, "full": 3.0}


@dataclass(frozen=True)
class Shape:
    """The sizes of a decoder that set its FLOPs."""

    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int

    @classmethod
    def of(cls, config: Any) -> Shape:
        """From a transformers ``PretrainedConfig`` (Llama-style names)."""
        heads = int(config.num_attention_heads)
        head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // heads)
        return cls(
            layers=int(config.num_hidden_layers),
            hidden=int(config.hidden_size),
            intermediate=int(config.intermediate_size),
            heads=heads,
            kv_heads=int(getattr(config, "num_key_value_heads", None) or heads),
            head_dim=head_dim,
            vocab=int(config.vocab_size),
        )

    @property
    def matmul_weights(self) -> int:
        """Weights every token multiplies by: q, k, v, o, the gated MLP, the LM head."""
        d, a, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        per_layer = d * a + 2 * d * kv + a * d + 3 * d * self.intermediate
        return self.layers * per_layer + self.vocab * d


def forward_flops(shape: Shape, lengths: Iterable[int]) -> float:
    """Forward FLOPs of causal rows of these token lengths, each attending to itself only."""
    lengths = list(lengths)
    tokens = sum(lengths)
    attended = sum(n * (n + 1) / 2 for n in lengths)  # sum over tokens of positions seen
    attn = 4.0 * shape.layers * shape.heads * shape.head_dim * attended
    return 2.0 * shape.matmul_weights * tokens + attn


def train_flops(shape: Shape, lengths: Iterable[int], trained: str = "lora") -> float:
    """Training FLOPs (forward + backward) of rows of these lengths."""
    return TRAIN_MULTIPLIER[trained] * forward_flops(shape, lengths)


def matmul_rate(threads: int = 1, n: int = 1024, min_cpu_s: float = 1.0) -> float:
    """float32 FLOPs per CPU second of one ``n x n`` matmul with ``threads`` torch threads,
    best of repeats over at least ``min_cpu_s`` (the least-disturbed run on a shared
    machine). With more than one thread, CPU seconds add up across cores."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(n, n), torch.randn(n, n)
        torch.mm(a, b)  # warm up
        best, spent = float("inf"), 0.0
        while spent < min_cpu_s:
            c0 = time.process_time()
            for _ in range(4):
                torch.mm(a, b)
            took = time.process_time() - c0
            spent += took
            best = min(best, took / 4)
    finally:
        torch.set_num_threads(before)
    return 2.0 * n**3 / max(best, 1e-9)


def floor_line(what: str, flops: float, tokens: int, rate: float, measured_tps: float) -> str:
    """One line: the floor's seconds and tokens/s, and the measured figure against it."""
    floor_s = flops / rate
    ceiling = tokens / floor_s if floor_s > 0 else 0.0
    share = measured_tps / ceiling if ceiling > 0 else 0.0
    return (
        f"floor ({what}): {flops / max(tokens, 1) / 1e9:.2f} GFLOP/token x {tokens:,} tokens "
        f"needed / {rate / 1e9:.1f} GFLOP/s matmul = {floor_s:.1f} s, {ceiling:,.1f} tokens/s; "
        f"measured {measured_tps:,.1f} tokens/s = {share:.1%} of the floor's rate"
    )
