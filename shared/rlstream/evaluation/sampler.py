"""Samplers: k generations per prompt from a base model plus an optional LoRA adapter.

``HFSampler`` runs transformers batched with left padding, on CPU or GPU, with
a bounded ``max_new_tokens`` and stopping at EOS (a base model that
rambles to the token limit dominates evaluation time, so the bound matters). By default the
prompts' common prefix (system prompt) is prefilled once per model and greedy rows leave the
batch at EOS (:mod:`rlstream.evaluation.prefix`; same outputs, ``prefix_cache=False`` runs
plain ``generate``). The chat
template is always applied with the prompt's system message; a prompt without one gets an
empty system message, because SmolLM2's template otherwise injects its own default.
``vllm`` is used instead when it is importable and a GPU is present (the GPU image).
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rlstream.errors import ConfigError
from rlstream.evaluation.models import Decoding, ModelRef
from rlstream.evaluation.prefix import PrefixCache, common_prefix, greedy_stream

Messages = Sequence[dict[str, Any]]
#: called with the number of prompts just finished
Advance = Callable[[int], None]


@dataclass(frozen=True)
class Generation:
    text: str
    tokens: int
    #: stopped at EOS (False: cut at max_new_tokens)
    finished: bool


class Sampler(Protocol):
    name: str

    def generate(
        self, prompts: Sequence[Messages], decoding: Decoding, advance: Advance | None = None
    ) -> list[list[Generation]]: ...

    def close(self) -> None: ...


def with_system(messages: Messages) -> list[dict[str, Any]]:
    """The prompt with a system message first; a next-action prompt keeps its earlier
    turns' tool calls and tool results in the shape the training template renders."""
    from rlstream.training.chat import normalise_message

    msgs: list[dict[str, Any]] = [
        normalise_message(m) if uses_tools([m]) else {"role": m["role"], "content": m["content"]}
        for m in messages
    ]
    if not msgs or msgs[0]["role"] != "system":
        msgs.insert(0, {"role": "system", "content": ""})
    return msgs


def uses_tools(messages: Messages) -> bool:
    return any(m.get("tool_calls") or m["role"] == "tool" for m in messages)


def prompts_per_batch(encoded: Sequence[Sequence[int]], decoding: Decoding) -> int:
    """``batch_size`` prompts, fewer when their KV cache would pass ``batch_tokens``
    (the longest prompt plus ``max_new_tokens``, times the samples per prompt)."""
    longest = max((len(e) for e in encoded), default=1) + decoding.max_new_tokens
    fit = decoding.batch_tokens // (longest * decoding.samples)
    return max(1, min(decoding.batch_size, fit))


def resolve_device(device: str) -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class HFSampler:
    """transformers; prompts sorted by length so batches pad little. ``stats`` counts the
    tokens run through the model: prompt tokens prefilled (pads included) and decode
    row-steps."""

    name = "transformers"

    def __init__(self, model: ModelRef, device: str = "auto", prefix_cache: bool = True) -> None:
        from rlstream.training.basemodel import load_causal_lm

        self.device = resolve_device(device)
        adapter = None if model.adapter_dir is None else Path(model.adapter_dir)
        with warnings.catch_warnings():  # peft calls a transformers API deprecated for v6
            warnings.simplefilter("ignore", FutureWarning)
            lm, self.tok = load_causal_lm(model.base, adapter, device=self.device)
        self.model: Any = lm
        self.prefix = PrefixCache(lm, self.device) if prefix_cache else None
        self.stats = {"prefill_tokens": 0, "decode_tokens": 0}

    def _encode(self, messages: Messages) -> list[int]:
        from rlstream.training.chat import training_template

        # Earlier tool calls render as the training template writes them (SmolLM2's own
        # template drops them); plain prompts keep the model's template, byte for byte.
        template = training_template(self.tok) if uses_tools(messages) else None
        text = self.tok.apply_chat_template(
            with_system(messages), tokenize=False, add_generation_prompt=True,
            chat_template=template,
        )  # fmt: skip
        ids: list[int] = self.tok(text, add_special_tokens=False)["input_ids"]
        return ids

    def generate(
        self, prompts: Sequence[Messages], decoding: Decoding, advance: Advance | None = None
    ) -> list[list[Generation]]:
        import torch

        encoded = [self._encode(m) for m in prompts]
        order = sorted(range(len(encoded)), key=lambda i: (len(encoded[i]), i))
        out: list[list[Generation]] = [[] for _ in prompts]
        n = decoding.samples
        eos = self.tok.eos_token_id
        prefix = [] if self.prefix is None else common_prefix(encoded)
        width = prompts_per_batch(encoded, decoding)
        if self.prefix is not None and decoding.greedy:
            rows = greedy_stream(
                self.model, self.prefix, prefix, [encoded[i][len(prefix) :] for i in order],
                width, decoding.max_new_tokens, eos, self.tok.pad_token_id, advance, self.stats,
            )  # fmt: skip
            for i, row in zip(order, rows, strict=True):
                out[i].append(self._generation(row))
            return out
        for b, start in enumerate(range(0, len(order), width)):
            idx = order[start : start + width]
            torch.manual_seed(decoding.seed * 100_003 + b)
            if self.prefix is None:
                new = self._plain(encoded, idx, decoding)
            else:
                new = self._sampled(prefix, [encoded[i][len(prefix) :] for i in idx], decoding)
            for j, row in enumerate(new):
                out[idx[j // n]].append(self._generation(row))
            if advance is not None:
                advance(len(idx))
        return out

    def _generation(self, row: list[int]) -> Generation:
        """The text before the first EOS (a row cut at the limit has none)."""
        eos = self.tok.eos_token_id
        stop = next((t for t, tok in enumerate(row) if tok == eos), None)
        body = row if stop is None else row[:stop]
        text = str(self.tok.decode(body, skip_special_tokens=True))
        return Generation(text.strip(), len(body), stop is not None)

    def _kwargs(self, decoding: Decoding) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "max_new_tokens": decoding.max_new_tokens,
            "num_return_sequences": decoding.samples,
            "pad_token_id": self.tok.pad_token_id,
            "eos_token_id": self.tok.eos_token_id,
        }
        if decoding.greedy:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            kwargs.update(
                do_sample=True, temperature=decoding.temperature, top_p=decoding.top_p, top_k=0
            )
        return kwargs

    def _run_generate(self, width: int, **inputs: Any) -> list[list[int]]:
        """``generate``; the new tokens per returned row (pads after EOS included)."""
        import torch

        with torch.no_grad():
            seqs: Any = self.model.generate(**inputs)
        new: list[list[int]] = seqs[:, width:].tolist()
        self.stats["decode_tokens"] += len(new) * max(len(new[0]) - 1, 0)
        return new

    def _plain(self, encoded: list[list[int]], idx: list[int], decoding: Decoding) -> Any:
        batch = self.tok.pad(
            {"input_ids": [encoded[i] for i in idx]}, padding=True, return_tensors="pt"
        ).to(self.device)
        width = batch["input_ids"].shape[1]
        self.stats["prefill_tokens"] += len(idx) * decoding.samples * width
        return self._run_generate(width, **batch, **self._kwargs(decoding))

    def _sampled(self, prefix: list[int], suffixes: list[list[int]], decoding: Decoding) -> Any:
        """``generate`` continuing from the prefix cache: the same batches and seeds as
        the plain path, so the random draws have the same shapes."""
        import torch

        from rlstream.evaluation.prefix import layout

        assert self.prefix is not None
        n = decoding.samples
        cache = self.prefix.expanded(prefix, len(suffixes) * n)
        ids, mask, _ = layout(len(prefix), suffixes, self.tok.pad_token_id, self.device)
        head = torch.tensor(prefix, dtype=torch.long, device=self.device)
        full = torch.cat([head.expand(len(suffixes), len(prefix)), ids], dim=1)
        self.stats["prefill_tokens"] += len(suffixes) * n * ids.shape[1]
        kwargs = self._kwargs(decoding)
        return self._run_generate(
            full.shape[1],
            input_ids=full,
            attention_mask=mask,
            **{self.prefix.kwarg: cache},
            **kwargs,
        )

    def close(self) -> None:
        del self.model


def vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None


def make_sampler(
    model: ModelRef, kind: str = "auto", device: str = "auto", prefix_cache: bool = True
) -> Sampler:
    """``hf`` (transformers), ``vllm``, or ``auto``: vLLM when importable on a GPU.
    ``prefix_cache``: reuse the prompts' common prefix (same outputs; off: plain generate)."""
    if kind == "vllm" or (kind == "auto" and vllm_available() and resolve_device(device) == "cuda"):
        if not vllm_available():
            raise ConfigError("the vllm sampler needs the vllm package (the GPU image has it)")
        from rlstream.evaluation.vllm_sampler import VLLMSampler

        return VLLMSampler(model, prefix_cache)
    return HFSampler(model, device, prefix_cache)
