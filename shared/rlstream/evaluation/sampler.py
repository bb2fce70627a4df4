"""Samplers: k generations per prompt from a base model plus an optional LoRA adapter.

``HFSampler`` runs transformers ``generate`` batched with left padding, on CPU or GPU, with
a bounded ``max_new_tokens`` and stopping at EOS (a base model that
rambles to the token limit dominates evaluation time, so the bound matters). The chat
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


def resolve_device(device: str) -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class HFSampler:
    """transformers ``generate``; prompts sorted by length so batches pad little."""

    name = "transformers"

    def __init__(self, model: ModelRef, device: str = "auto") -> None:
        from rlstream.training.basemodel import load_causal_lm

        self.device = resolve_device(device)
        adapter = None if model.adapter_dir is None else Path(model.adapter_dir)
        with warnings.catch_warnings():  # peft calls a transformers API deprecated for v6
            warnings.simplefilter("ignore", FutureWarning)
            lm, self.tok = load_causal_lm(model.base, adapter, device=self.device)
        self.model: Any = lm

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
        pad = self.tok.pad_token_id
        for b, start in enumerate(range(0, len(order), decoding.batch_size)):
            idx = order[start : start + decoding.batch_size]
            batch = self.tok.pad(
                {"input_ids": [encoded[i] for i in idx]}, padding=True, return_tensors="pt"
            ).to(self.device)
            kwargs: dict[str, Any] = {
                "max_new_tokens": decoding.max_new_tokens,
                "num_return_sequences": n,
                "pad_token_id": pad,
                "eos_token_id": eos,
            }
            if decoding.greedy:
                kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
            else:
                kwargs.update(
                    do_sample=True, temperature=decoding.temperature, top_p=decoding.top_p, top_k=0
                )
            torch.manual_seed(decoding.seed * 100_003 + b)
            with torch.no_grad():
                seqs: Any = self.model.generate(**batch, **kwargs)
            new: list[list[int]] = seqs[:, batch["input_ids"].shape[1] :].tolist()
            for j, row in enumerate(new):
                stop = next((t for t, tok in enumerate(row) if tok == eos), None)
                body = row if stop is None else row[:stop]
                text = str(self.tok.decode(body, skip_special_tokens=True))
                out[idx[j // n]].append(Generation(text.strip(), len(body), stop is not None))
            if advance is not None:
                advance(len(idx))
        return out

    def close(self) -> None:
        del self.model


def vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None


def make_sampler(model: ModelRef, kind: str = "auto", device: str = "auto") -> Sampler:
    """``hf`` (transformers), ``vllm``, or ``auto``: vLLM when importable on a GPU."""
    if kind == "vllm" or (kind == "auto" and vllm_available() and resolve_device(device) == "cuda"):
        if not vllm_available():
            raise ConfigError("the vllm sampler needs the vllm package (the GPU image has it)")
        from rlstream.evaluation.vllm_sampler import VLLMSampler

        return VLLMSampler(model)
    return HFSampler(model, device)
