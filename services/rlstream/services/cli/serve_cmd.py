"""``rlstream serve``: an OpenAI-compatible chat-completions endpoint for a trained model.

For small deployments, demos and tests: transformers on CPU or one GPU, one generation at
a time. Every served conversation is logged (JSONL file or the raw topic) tagged with the
serving model id, for ``rlstream ingest`` to pick up like any other log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import Field, SecretStr

from rlstream.errors import ConfigError
from rlstream.services.cli.common import console, friendly_errors
from rlstream.services.cli.db import DataDirOpt, DsnOpt, _dsn
from rlstream.settings import Settings


class ServeSettings(Settings):
    """``rlstream serve``'s own settings (env ``RLSTREAM_SERVE_*``)."""

    serve_admin_token: SecretStr | None = Field(
        default=None, description="bearer token the hot-swap admin call must carry"
    )
    topic_prefix: str = Field(
        default="", description="prepended to the raw topic --log-kafka writes (as ingest reads it)"
    )


def raw_topic() -> str:
    """The physical raw topic ingest consumes: the contract name behind ``topic_prefix``."""
    from rlstream.events import topics

    return ServeSettings().topic_prefix + topics.CONVERSATIONS_RAW


SERVE_HELP = """Serve a model over an OpenAI-compatible API: POST /v1/chat/completions (stream true/false, tool calls), GET /v1/models, /healthz, /readyz, /metrics; POST /v1/rlstream/adapter hot-swaps the served adapter without a restart (the registry's serve deploy target calls it; RLSTREAM_SERVE_ADMIN_TOKEN guards it).

MODEL is an adapter folder, a training run's output folder, a full model folder, or a registry model id / prefix / alias (champion with --agent); without it the default base model is served alone.

Every conversation is logged as a canonical transcript tagged with the model id: to --log-jsonl FILE, or with --log-kafka to the raw topic (settings' Kafka), where the ingest service redacts PII like any other log.

[bold]Examples[/]

rlstream serve runs/run-1 --log-jsonl served.jsonl

rlstream serve champion --agent support-bot --log-kafka --port 8000

curl -s localhost:8000/v1/chat/completions -d '{"messages": [{"role": "user", "content": "hi"}]}'
"""


@friendly_errors
def serve(
    model: Annotated[
        str | None, typer.Argument(help="adapter/run/model folder or registry id")
    ] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="for champion/challenger")] = None,
    model_id: Annotated[
        str | None, typer.Option("--model-id", help="id to report and tag logs with")
    ] = None,
    host: Annotated[str, typer.Option("--host")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535)] = 8000,
    device: Annotated[str, typer.Option("--device", help="cpu | cuda | cuda:N")] = "cpu",
    log_jsonl: Annotated[
        Path | None, typer.Option("--log-jsonl", help="append served conversations here")
    ] = None,
    log_kafka: Annotated[
        bool, typer.Option("--log-kafka", help="publish served conversations to the raw topic")
    ] = False,
    no_log: Annotated[bool, typer.Option("--no-log", help="log nothing (tests, demos)")] = False,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="default")] = 128,
    max_tokens_ceiling: Annotated[int, typer.Option("--max-tokens-ceiling", min=1)] = 1024,
    temperature: Annotated[
        float, typer.Option("--temperature", min=0.0, help="when a request sets none; 0 = greedy")
    ] = 0.0,
    dsn: str | None = DsnOpt,
    data_dir: Path | None = DataDirOpt,
) -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError as exc:
        raise ConfigError(
            f"rlstream serve needs the serve extra: pip install 'rlstream[serve,train]' ({exc})"
        ) from exc

    from rlstream.services.cli.servehttp.app import State, build_app
    from rlstream.services.cli.servehttp.engine import Engine
    from rlstream.services.cli.servehttp.resolve import local, resolve
    from rlstream.services.cli.servehttp.sinks import JsonlSink, KafkaSink, Sink
    from rlstream.settings import load_settings

    if sum((log_jsonl is not None, log_kafka, no_log)) != 1:
        raise ConfigError(
            "say where served conversations go: --log-jsonl FILE, --log-kafka or --no-log"
        )
    settings = load_settings()
    needs_db = model is not None and local(Path(model)) is None
    base, adapter, mid = resolve(
        model, agent, _dsn(dsn, data_dir, settings) if needs_db else None, model_id
    )
    sink: Sink | None = None
    if log_jsonl is not None:
        sink = JsonlSink(log_jsonl)
    elif log_kafka:
        sink = KafkaSink(settings, raw_topic())

    def swap_load(full: Path | None, new_adapter: Path | None) -> Engine:
        return Engine(full or base, new_adapter, device=device, default_temperature=temperature)

    token = ServeSettings().serve_admin_token
    state = State(
        model_id=mid,
        load=lambda: Engine(base, adapter, device=device, default_temperature=temperature),
        swap_load=swap_load,
        admin_token=token.get_secret_value() if token else None,
        sink=sink,
        agent=agent,
        default_max_tokens=max_tokens,
        max_tokens_ceiling=max_tokens_ceiling,
    )
    console.print(
        f"[dim]serving {mid}: {base}"
        + (f" + {adapter}" if adapter else "")
        + f" on http://{host}:{port}/v1[/]"
    )
    uvicorn.run(build_app(state), host=host, port=port, log_level="warning")


serve.__doc__ = SERVE_HELP
