"""The model behind ``rlstream serve``: a base model plus an adapter, transformers ``generate``.

One generation at a time (a lock): on CPU or one GPU, concurrent ``generate`` calls only
slow each other down and multiply memory. Prompts render with the training template when
they carry tool calls or tools (SmolLM2's own template drops tool calls), exactly as the
evaluator's sampler renders them, so the served model sees what it was evaluated on.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlstream.serving.api import ChatRequest


@dataclass(frozen=True)
class Output:
    text: str
    prompt_tokens: int
    completion_tokens: int
    #: stopped at EOS (False: cut at the token limit)
    finished: bool


def _plain(req: ChatRequest) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    for m in req.messages:
        d: dict[str, Any] = {
            "role": "system" if m.role == "developer" else m.role,
            "content": m.text,
        }
        if m.tool_calls:
            d["tool_calls"] = [
                {"function": {"name": c.function.name, "arguments": c.function.arguments}}
                for c in m.tool_calls
            ]
        if m.tool_call_id:
            d["tool_call_id"] = m.tool_call_id
        msgs.append(d)
    if msgs[0]["role"] != "system":  # SmolLM2's template otherwise injects its own default
        msgs.insert(0, {"role": "system", "content": ""})
    return msgs


class Engine:
    def __init__(
        self,
        base: Path | str,
        adapter: Path | None,
        device: str = "cpu",
        default_temperature: float = 0.0,
    ) -> None:
        from rlstream.training.basemodel import load_causal_lm

        self.device, self.default_temperature = device, default_temperature
        with warnings.catch_warnings():  # peft calls a transformers API deprecated for v6
            warnings.simplefilter("ignore", FutureWarning)
            lm, self.tok = load_causal_lm(base, adapter, device=device)
        self.lm: Any = lm
        self.lock = threading.Lock()

    def encode(self, req: ChatRequest) -> list[int]:
        from rlstream.training.chat import training_template

        msgs = _plain(req)
        tooly = bool(req.tools) or any(m.get("tool_calls") or m["role"] == "tool" for m in msgs)
        tok: Any = self.tok
        text = tok.apply_chat_template(
            msgs,
            tools=req.tools or None,
            tokenize=False,
            add_generation_prompt=True,
            chat_template=training_template(self.tok) if tooly else None,
        )
        ids: list[int] = self.tok(text, add_special_tokens=False)["input_ids"]
        return ids

    def _kwargs(self, req: ChatRequest, max_new: int) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "max_new_tokens": max_new,
            "pad_token_id": self.tok.pad_token_id,
            "eos_token_id": self.tok.eos_token_id,
        }
        temp = self.default_temperature if req.temperature is None else req.temperature
        if temp <= 0:
            kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            kw.update(do_sample=True, temperature=temp, top_p=req.top_p or 1.0, top_k=0)
        return kw

    def _run(self, ids: list[int], req: ChatRequest, max_new: int, streamer: Any) -> list[int]:
        import torch

        inp = torch.tensor([ids], device=self.device)
        with self.lock, torch.no_grad():
            if req.seed is not None:
                torch.manual_seed(req.seed)
            out: Any = self.lm.generate(
                input_ids=inp,
                attention_mask=torch.ones_like(inp),
                streamer=streamer,
                **self._kwargs(req, max_new),
            )
        new: list[int] = out[0, len(ids) :].tolist()
        return new

    def _finish(self, ids: list[int], new: list[int]) -> Output:
        eos = self.tok.eos_token_id
        stop = next((i for i, t in enumerate(new) if t == eos), None)
        body = new if stop is None else new[:stop]
        text = str(self.tok.decode(body, skip_special_tokens=True)).strip()
        return Output(text, len(ids), len(body), stop is not None)

    def complete(self, req: ChatRequest, max_new: int) -> Output:
        ids = self.encode(req)
        return self._finish(ids, self._run(ids, req, max_new, None))

    def stream(self, req: ChatRequest, max_new: int) -> tuple[Iterator[str], list[Output]]:
        """(text pieces as they are generated, a list that holds the Output once done).

        ``generate`` runs on its own thread; the iterator yields decoded text pieces."""
        from transformers import TextIteratorStreamer

        ids = self.encode(req)
        streamer: Any = TextIteratorStreamer(self.tok, skip_prompt=True, skip_special_tokens=True)
        done: list[Output] = []

        def work() -> None:
            try:
                done.append(self._finish(ids, self._run(ids, req, max_new, streamer)))
            except BaseException:
                streamer.end()
                raise

        thread = threading.Thread(target=work, name="rlstream-serve-generate", daemon=True)
        thread.start()

        def pieces() -> Iterator[str]:
            yield from streamer
            thread.join()

        return pieces(), done
