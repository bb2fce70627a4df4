"""``rlstream chat``: talk to a trained model (base model + LoRA adapter) on CPU.

A quick, honest look at what an evaluation number means: the same base model and
adapter the evaluator sampled, the same chat template, greedy by default.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from rlstream.errors import ConfigError
from rlstream.services.cli.common import console, friendly_errors, out
from rlstream.services.cli.db import DataDirOpt, DsnOpt, _dsn

CHAT_HELP = """Chat with a model: the base model plus a LoRA adapter, on CPU.

MODEL_OR_ADAPTER is an adapter folder, a training run's output folder (its adapter/ is used), a full model folder, or a registry model id / prefix / alias (champion, challenger with --agent).

Type a message and press Enter; /reset starts over, /exit (or Ctrl-D) quits. Input can be piped.

[bold]Examples[/]

rlstream chat runs/run-1/adapter

rlstream chat champion --agent support-bot --system "You are Acme's support agent."

printf 'Where is order A-48213?\\n' | rlstream chat 3f2a9c1b7d0e --max-new-tokens 64
"""


def _local(path: Path) -> tuple[Path | None, Path | None] | None:
    """(base, adapter) for a folder, or None when it is not a model folder."""
    if not path.is_dir():
        return None
    if (path / "adapter" / "adapter_config.json").is_file():
        return None, path / "adapter"
    if (path / "adapter_config.json").is_file():
        return None, path
    if (path / "config.json").is_file():
        return path, None
    raise ConfigError(f"{path} holds no adapter (adapter_config.json) and no model (config.json)")


async def _from_registry(dsn: str, ref: str, agent: str | None) -> tuple[Path | None, Path | None]:
    from rlstream.registry import Registry
    from rlstream.storage import Store, upgrade

    await upgrade(dsn)
    store = await Store.connect(dsn, max_size=2)
    try:
        model = await Registry(store).resolve(ref, agent=agent)
    finally:
        await store.close()
    if not model.path:
        raise ConfigError(f"model {model.model_id[:12]} has no stored path")
    base = model.metadata.get("base_model")
    found = _local(Path(model.path))
    if found is None:
        raise ConfigError(f"model {model.model_id[:12]}: {model.path} is gone")
    base_dir = Path(base) if isinstance(base, str) and Path(base).is_dir() else found[0]
    return base_dir, found[1]


def _resolve(
    ref: str, agent: str | None, dsn: str | None, data_dir: Path | None
) -> tuple[Any, Path | None]:
    from rlstream.settings import load_settings

    found = _local(Path(ref))
    if found is None:
        found = asyncio.run(_from_registry(_dsn(dsn, data_dir, load_settings()), ref, agent))
    base, adapter = found
    if base is None:
        from rlstream.training.basemodel import ensure_base_model

        base = ensure_base_model()
    return base, adapter


def _reply(
    lm: Any, tok: Any, messages: list[dict[str, str]], max_new_tokens: int, temperature: float
) -> str:
    import torch

    prompt = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    enc = tok(prompt, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        ids = lm.generate(
            **enc,
            max_new_tokens=max_new_tokens,
            do_sample=temperature > 0,
            temperature=temperature if temperature > 0 else None,
            top_p=None,
            top_k=None,
            pad_token_id=tok.pad_token_id,
        )
    return str(tok.decode(ids[0, enc["input_ids"].shape[1] :], skip_special_tokens=True)).strip()


@friendly_errors
def chat(
    model: Annotated[str, typer.Argument(help="adapter/run/model folder, or a registry model id")],
    agent: Annotated[str | None, typer.Option("--agent", help="for champion/challenger")] = None,
    system: Annotated[
        str, typer.Option("--system", help="system prompt (the template adds a default otherwise)")
    ] = "You are a helpful assistant.",
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", min=1)] = 128,
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="0 = greedy")] = 0.0,
    dsn: str | None = DsnOpt,
    data_dir: Path | None = DataDirOpt,
) -> None:
    base, adapter = _resolve(model, agent, dsn, data_dir)
    from rlstream.training.basemodel import load_causal_lm

    with console.status(f"loading {Path(str(base)).name}" + (f" + {adapter}" if adapter else "")):
        lm, tok = load_causal_lm(base, adapter)
    interactive = sys.stdin.isatty()
    console.print(f"[dim]model: {base}  adapter: {adapter or 'none'}  (/reset, /exit)[/]")
    messages = [{"role": "system", "content": system}]
    while True:
        try:
            line = console.input("[bold]you>[/] ") if interactive else input()
        except EOFError:
            break
        text = line.strip()
        if not text:
            continue
        if text == "/exit":
            break
        if text == "/reset":
            messages = messages[:1]
            continue
        messages.append({"role": "user", "content": text})
        answer = _reply(lm, tok, messages, max_new_tokens, temperature)
        messages.append({"role": "assistant", "content": answer})
        out.print(f"[bold]assistant>[/] {answer}", markup=True, highlight=False)


chat.__doc__ = CHAT_HELP
