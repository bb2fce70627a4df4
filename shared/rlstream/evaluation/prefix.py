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
* greedy: our own loop (argmax on float32 logits, as ``generate``); a row leaves the batch
  at EOS (its cache rows are dropped) and the next prompt joins (continuous batching: the
  joining rows' cache gets masked zero slots after the prefix so the widths match), so no
  row waits for the longest member of its batch and every step runs full;
* the greedy loop's caches reserve room for ``max_new_tokens`` more positions
  (:func:`reserved_layer`): a decode step writes its keys and values in place instead of
  ``torch.cat``-copying every layer's whole cache (measured: bench/README.md);
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
from functools import cache
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


@cache
def reserved_layer() -> type:
    """``ReservedLayer``: a transformers ``DynamicLayer`` whose keys and values are views
    into buffers with ``reserve`` spare positions, so appending a token writes in place.
    When the batch changes (rows leave or join: the tensors are replaced), the next append
    copies into a fresh buffer. Built on first use: transformers is the ``train`` extra."""
    from transformers.cache_utils import DynamicLayer

    class ReservedLayer(DynamicLayer):  # type: ignore[no-untyped-call]
        reserve = 64

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> Any:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            keys: Any = self.keys
            n = keys.shape[-2] if keys.numel() else 0
            m = n + key_states.shape[-2]
            buf = getattr(self, "_buf", None)
            if (
                buf is None
                or not n
                or buf[0].shape[2] < m
                or buf[0].shape[0] != key_states.shape[0]
                or buf[0].data_ptr() != keys.data_ptr()
            ):
                b, h, _, d = key_states.shape
                buf = (
                    key_states.new_empty((b, h, m + self.reserve, d)),
                    value_states.new_empty((b, h, m + self.reserve, value_states.shape[3])),
                )
                if n:
                    buf[0][:, :, :n] = keys
                    buf[1][:, :, :n] = self.values
                self._buf = buf
            buf[0][:, :, n:m] = key_states
            buf[1][:, :, n:m] = value_states
            self.keys, self.values = buf[0][:, :, :m], buf[1][:, :, :m]
            return self.keys, self.values

    return ReservedLayer


def reserve(kv: Any, tokens: int) -> Any:
    """``kv`` (a ``DynamicCache``) with every layer reserving ``tokens`` spare positions."""
    cls = reserved_layer()
    for layer in kv.layers:
        layer.__class__ = cls  # same state; appends now write in place
        layer.reserve = tokens
    return kv


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


class _Rows:
    """The rows being decoded: their cache, mask, last positions and pending logits."""

    def __init__(self, cache: Any, mask: Any, last: Any, logits: Any, ids: list[int]) -> None:
        self.cache, self.mask, self.last, self.logits, self.ids = cache, mask, last, logits, ids

    def keep(self, rows: list[int]) -> None:
        import torch

        sel = torch.tensor(rows, device=self.mask.device)
        self.cache.batch_select_indices(sel)
        self.mask, self.last, self.logits = self.mask[sel], self.last[sel], self.logits[sel]
        self.ids = [self.ids[j] for j in rows]

    def join(self, other: _Rows, prefix_len: int) -> None:
        """Append ``other``'s rows; the shorter side gets masked zero slots right after
        the prefix, so both sides' real tokens keep their keys, values and positions."""
        import torch

        width = max(self.mask.shape[1], other.mask.shape[1])
        for side in (self, other):
            gap = width - side.mask.shape[1]
            if gap:
                m = side.mask
                side.mask = torch.cat(
                    [m[:, :prefix_len], m.new_zeros((m.shape[0], gap)), m[:, prefix_len:]], 1
                )
                for layer in side.cache.layers:
                    for name in ("keys", "values"):
                        t = getattr(layer, name)
                        pad = t.new_zeros((*t.shape[:2], gap, t.shape[3]))
                        setattr(
                            layer,
                            name,
                            torch.cat([t[:, :, :prefix_len], pad, t[:, :, prefix_len:]], 2),
                        )
        for mine, theirs in zip(self.cache.layers, other.cache.layers, strict=True):
            mine.keys = torch.cat([mine.keys, theirs.keys])
            mine.values = torch.cat([mine.values, theirs.values])
        self.mask = torch.cat([self.mask, other.mask])
        self.last = torch.cat([self.last, other.last])
        self.logits = torch.cat([self.logits, other.logits])
        self.ids += other.ids


def greedy_stream(
    model: Any,
    prefix: PrefixCache,
    prefix_ids: Sequence[int],
    suffixes: Sequence[Sequence[int]],
    rows: int,
    max_new_tokens: int,
    eos: int,
    pad: int,
    on_done: Any = None,
    stats: dict[str, int] | None = None,
) -> list[list[int]]:
    """Greedy continuations of ``prefix_ids + suffix`` for every suffix, in order, at most
    ``rows`` at a time: a row ends at its EOS (included) or at ``max_new_tokens`` and leaves
    the batch, and the next suffixes join it (continuous batching). ``on_done(n)``: n
    prompts just finished; ``stats``: counts suffix tokens prefilled (pads included) and
    decode row-steps."""
    import torch

    kw = cache_kwarg(model)
    p = len(prefix_ids)
    out: list[list[int]] = [[] for _ in suffixes]
    waiting = list(range(len(suffixes)))
    batch: _Rows | None = None
    counts = stats if stats is not None else {}
    counts.setdefault("prefill_tokens", 0)
    counts.setdefault("decode_tokens", 0)

    def admit(n: int) -> _Rows:
        take, waiting[:] = waiting[:n], waiting[n:]
        cache = reserve(prefix.expanded(prefix_ids, len(take)), max_new_tokens)
        ids, mask, pos = layout(p, [suffixes[i] for i in take], pad, prefix.device)
        logits = model(
            input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
            logits_to_keep=1, **{kw: cache},
        ).logits[:, -1]  # fmt: skip
        counts["prefill_tokens"] += ids.numel()
        return _Rows(cache, mask, pos[:, -1], logits, take)

    with torch.no_grad():
        while waiting or batch is not None:
            if waiting and (batch is None or len(batch.ids) < rows):
                new = admit(rows - (0 if batch is None else len(batch.ids)))
                if batch is None:
                    batch = new
                else:
                    batch.join(new, p)
            assert batch is not None
            nxt = batch.logits.float().argmax(-1)
            keep = []
            for j, tok in enumerate(nxt.tolist()):
                row = out[batch.ids[j]]
                row.append(tok)
                if tok != eos and len(row) < max_new_tokens:
                    keep.append(j)
            if len(keep) < len(batch.ids) and on_done is not None:
                on_done(len(batch.ids) - len(keep))
            if not keep:
                batch = None
                continue
            if len(keep) < len(batch.ids):  # finished rows leave the batch and the cache
                batch.keep(keep)
                nxt = nxt[torch.tensor(keep, device=nxt.device)]
            batch.mask = torch.cat([batch.mask, batch.mask.new_ones((len(keep), 1))], dim=1)
            batch.last = batch.last + 1
            counts["decode_tokens"] += len(keep)
            batch.logits = model(
                input_ids=nxt[:, None], attention_mask=batch.mask,
                position_ids=batch.last[:, None], use_cache=True, **{kw: batch.cache},
            ).logits[:, -1]  # fmt: skip
    return out
