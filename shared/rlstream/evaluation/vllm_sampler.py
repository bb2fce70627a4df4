"""vLLM sampler for the GPU image: same prompts, chat template and decoding as HFSampler.

Imported only when ``vllm`` is importable (see :func:`rlstream.evaluation.sampler.make_sampler`).
Automatic prefix caching (``enable_prefix_caching``) shares the system prompt's KV blocks
across prompts. An evaluation builds one engine per model (baseline, then candidate) in one
process, so :meth:`VLLMSampler.close` tears the engine down and frees its GPU memory before
the next is built. Not run by CI (no GPU); the GPU check is ``bench/gpu_grpo.py --eval``.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Sequence
from typing import Any

from rlstream.evaluation.models import Decoding, ModelRef
from rlstream.evaluation.sampler import Advance, Generation, Messages, with_system


class VLLMSampler:
    name = "vllm"

    def __init__(self, model: ModelRef, prefix_cache: bool = True) -> None:
        from vllm import LLM

        self.adapter = model.adapter_dir
        self.llm: Any = LLM(
            model=model.base,
            enable_lora=self.adapter is not None,
            enable_prefix_caching=prefix_cache,
            seed=0,
        )

    def generate(
        self, prompts: Sequence[Messages], decoding: Decoding, advance: Advance | None = None
    ) -> list[list[Generation]]:
        from vllm import SamplingParams
        from vllm.lora.request import LoRARequest

        params = SamplingParams(
            n=decoding.samples,
            temperature=0.0 if decoding.greedy else decoding.temperature,
            top_p=1.0 if decoding.greedy else decoding.top_p,
            max_tokens=decoding.max_new_tokens,
            seed=decoding.seed,
        )
        lora = LoRARequest("candidate", 1, self.adapter) if self.adapter else None
        results = self.llm.chat(
            [with_system(m) for m in prompts], params, lora_request=lora, use_tqdm=False
        )
        out = [
            [
                Generation(c.text.strip(), len(c.token_ids), c.finish_reason == "stop")
                for c in r.outputs
            ]
            for r in results
        ]
        if advance is not None:
            advance(len(prompts))
        return out

    def close(self) -> None:
        """Drop the engine and free its GPU memory (vLLM's own cleanup helper)."""
        del self.llm
        gc.collect()
        with contextlib.suppress(ImportError):
            from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

            cleanup_dist_env_and_memory()
