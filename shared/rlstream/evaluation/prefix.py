"""Shared-prefix generation for :class:`~rlstream.evaluation.sampler.HFSampler`.

Agent prompts repeat one long system prompt (and tool list) before a short user turn, and
plain ``generate`` prefills it again for every prompt, so on a CPU prefill, not generation,
dominated evaluation. Here the prompts' longest common token prefix is prefilled once per
model (batch 1, memoised on the sampler: a LoRA candidate's prefix KV differs from its
base's, so each model computes its own), and every batch continues from a copy of it:

* layout per row ``[prefix][pad…][suffix]``: the prefix KV expanded to the batch, the
  suffixes left-padded after it, the attention mask zero on the pads, position ids counting
  real tokens only, so every real token sees exactly the keys, values and positions it has
  in plain left-padded ``generate``;
* greedy: our own loop (argmax on float32 logits, as ``generate``), and a row leaves the
  batch at EOS (its cache rows are dropped), so a batch no longer runs every row to its
  longest member;
* sampled: ``generate`` itself continues from the prefix cache, with the same batches and
  seeds as without it, so the random draws have the same shapes (identical samples unless
  the logits differ in rounding).

Exactness is tested, not assumed: greedy outputs equal plain ``generate``'s on the demo's
held-out prompts and on prompts with no common prefix (tests/unit/evaluation/).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Sequence
from typing import Any


def cache_kwarg(model: Any) -> str:
    """The forward/generate keyword for a KV cache: ``cache`` in newer transformers 5
    releases (``past_key_values`` deprecated), ``past_key_values`` before."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def common_prefix(seqs: Sequence[Sequence[int]]) -> list[int]:
    """The longest common prefix, short enough to leave every sequence one token of its
    own (the last prompt token's logits start generation)."""
    if not seqs:
        return []
    first = seqs[0]
    limit = min(len(s) for s in seqs) - 1
    n = 0
    while n < limit and all(s[n] == first[n] for s in seqs):
        n += 1
    return list(first[:n])


class PrefixCache:
    """One model's prefix KV (batch 1), recomputed only when the prefix changes."""

    def __init__(self, model: Any, device: str) -> None:
        self.model = model
        self.device = device
        self._key: tuple[int, ...] = ()
        self._kv: Any = None
        self.kwarg = cache_kwarg(model)
        #: prompt tokens prefilled for prefixes (counted once per distinct prefix)
        self.prefilled = 0

    def expanded(self, prefix: Sequence[int], rows: int) -> Any:
        """A fresh cache holding ``prefix`` for ``rows`` rows (empty for no prefix)."""
        import torch
        from transformers import DynamicCache

        if not prefix:
            return DynamicCache()
        if tuple(prefix) != self._key or self._kv is None:
            kv = DynamicCache()
            ids = torch.tensor([list(prefix)], device=self.device)
            with torch.no_grad():
                self.model(input_ids=ids, use_cache=True, logits_to_keep=1, **{self.kwarg: kv})
            self._key, self._kv = tuple(prefix), kv
            self.prefilled += len(prefix)
        cache = copy.deepcopy(self._kv)
        cache.batch_repeat_interleave(rows)
        return cache


def layout(prefix_len: int, suffixes: Sequence[Sequence[int]], pad: int, device: str) -> Any:
    """``(input_ids, attention_mask, position_ids)`` for ``[prefix][pad…][suffix]`` rows:
    ids and positions for the suffix part only, the mask over prefix and suffix."""
    import torch

    width = max(len(s) for s in suffixes)
    ids = torch.full((len(suffixes), width), pad, dtype=torch.long)
    mask = torch.zeros((len(suffixes), prefix_len + width), dtype=torch.long)
    mask[:, :prefix_len] = 1
    for r, s in enumerate(suffixes):
        ids[r, width - len(s) :] = torch.tensor(list(s), dtype=torch.long)
        mask[r, prefix_len + width - len(s) :] = 1
    pos = (mask.cumsum(-1) - 1)[:, prefix_len:]
    pos.masked_fill_(mask[:, prefix_len:] == 0, 0)  # pads: masked, any position does
    return ids.to(device), mask.to(device), pos.to(device)


def greedy_batch(
    model: Any,
    cache: Any,
    prefix_len: int,
    suffixes: Sequence[Sequence[int]],
    max_new_tokens: int,
    eos: int,
    pad: int,
    device: str,
) -> list[list[int]]:
    """Greedy continuations of ``prefix + suffix`` rows (``cache`` holds the prefix for
    every row); each row ends at its EOS (included) or at ``max_new_tokens``."""
    import torch

    ids, mask, pos = layout(prefix_len, suffixes, pad, device)
    kw = {cache_kwarg(model): cache}
    out: list[list[int]] = [[] for _ in suffixes]
    alive = list(range(len(suffixes)))
    last = pos[:, -1]
    with torch.no_grad():
        logits = model(
            input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
            logits_to_keep=1, **kw,
        ).logits[:, -1]  # fmt: skip
        for step in range(max_new_tokens):
            nxt = logits.float().argmax(-1)
            keep = []
            for j, tok in enumerate(nxt.tolist()):
                out[alive[j]].append(tok)
                if tok != eos:
                    keep.append(j)
            if not keep or step == max_new_tokens - 1:
                break
            if len(keep) < len(alive):  # finished rows leave the batch and the cache
                sel = torch.tensor(keep, device=device)
                cache.batch_select_indices(sel)
                mask, nxt, last = mask[sel], nxt[sel], last[sel]
                alive = [alive[j] for j in keep]
            mask = torch.cat([mask, mask.new_ones((len(alive), 1))], dim=1)
            last = last + 1
            logits = model(
                input_ids=nxt[:, None], attention_mask=mask, position_ids=last[:, None],
                use_cache=True, **kw,
            ).logits[:, -1]  # fmt: skip
    return out
