"""The HTTP app: ``/v1/chat/completions`` (streaming and not), ``/v1/models``, health, and
the admin hot swap ``POST /v1/rlstream/adapter``.

The model loads on a thread after the server starts, so ``/healthz`` answers at once and
``/readyz`` turns ready when the model is loaded (a pod is not sent traffic before). Each
completed exchange is logged to the sink as a canonical record tagged with the id of the
model that answered it (a request keeps the model it started on across a swap: swap.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from rlstream.services.cli.servehttp import metrics as m
from rlstream.services.cli.servehttp.engine import Engine, Output
from rlstream.services.cli.servehttp.sinks import Sink
from rlstream.services.cli.servehttp.swap import AdapterLoadError, Served, Swapper, locate
from rlstream.serving.adapter import ADAPTER_PATH, LOAD_FAILED, AdapterSwap
from rlstream.serving.api import (
    SSE_DONE,
    ChatChunk,
    ChatRequest,
    ChatResponse,
    Choice,
    ChunkChoice,
    Delta,
    FinishReason,
    ReplyMessage,
    ToolCallDelta,
    Usage,
    error_body,
    sse,
)
from rlstream.serving.record import exchange_record
from rlstream.serving.toolparse import fence_start, split_reply

log = logging.getLogger("rlstream.serve")


@dataclass
class State:
    #: the model loaded at start (``load``); a hot swap replaces it
    model_id: str
    load: Callable[[], Engine]
    sink: Sink | None
    agent: str | None = None
    default_max_tokens: int = 128
    max_tokens_ceiling: int = 1024
    #: (full model folder or None for the base, adapter folder or None) -> engine: hot swaps;
    #: None refuses them
    swap_load: Callable[[Path | None, Path | None], Engine] | None = None
    #: when set, the admin call needs ``Authorization: Bearer <token>``
    admin_token: str | None = None
    error: str | None = None
    started: float = field(default_factory=time.time)
    swapper: Swapper[Engine] = field(default_factory=Swapper)

    @property
    def served(self) -> Served[Engine] | None:
        return self.swapper.current


def _json(status: int, body: dict[str, Any]) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


async def _log(
    st: State, mid: str, req: ChatRequest, reply: ReplyMessage, cid: str, t0: datetime
) -> None:
    if st.sink is None:
        return
    rec = exchange_record(
        conversation_id=cid,
        messages=req.messages,
        reply=reply,
        model_id=mid,
        tools=req.tools,
        started_at=t0,
        ended_at=datetime.now(UTC),
        agent=st.agent,
        metadata={k: v for k, v in (req.metadata or {}).items() if k != "conversation_id"},
    )
    try:
        await st.sink.write(rec)
        m.LOGGED.labels(st.sink.name, "ok").inc()
    except Exception:
        m.LOGGED.labels(st.sink.name, "failed").inc()
        log.warning("could not log conversation %s", cid, exc_info=True)


def _reply(out: Output) -> tuple[ReplyMessage, FinishReason]:
    content, calls = split_reply(out.text)
    finish: FinishReason = "tool_calls" if calls else ("stop" if out.finished else "length")
    return ReplyMessage(content=content, tool_calls=calls or None), finish


def _conversation_id(request: Request, req: ChatRequest) -> str:
    given = request.headers.get("x-conversation-id") or (req.metadata or {}).get("conversation_id")
    return str(given) if given else "serve-" + uuid.uuid4().hex


async def completions(request: Request) -> Response:
    st: State = request.app.state.rl
    try:
        req = ChatRequest.model_validate(orjson.loads(await request.body()))
    except (orjson.JSONDecodeError, ValidationError) as exc:
        m.REQUESTS.labels("400", "unknown").inc()
        return _json(400, error_body(f"bad request: {str(exc).splitlines()[0]}"))
    served = st.served  # this request's model to its end, whatever a swap does meanwhile
    stream = "true" if req.stream else "false"
    if served is None:
        m.REQUESTS.labels("503", stream).inc()
        return _json(503, error_body(st.error or "model is loading", "unavailable"))
    engine, mid = served.engine, served.model_id
    max_new = req.token_limit(st.default_max_tokens, st.max_tokens_ceiling)
    cid, t0, clock = _conversation_id(request, req), datetime.now(UTC), time.perf_counter()
    rid, created = "chatcmpl-" + uuid.uuid4().hex, int(time.time())
    if req.stream:
        return StreamingResponse(
            _stream(st, served, req, max_new, (rid, created, cid, t0, clock)),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Conversation-Id": cid},
        )
    try:
        out = await asyncio.to_thread(engine.complete, req, max_new)
    except Exception as exc:  # a template or generate failure: the OpenAI envelope, counted
        log.warning("generation failed", exc_info=True)
        m.REQUESTS.labels("500", stream).inc()
        return _json(500, error_body(f"generation failed: {exc}", "server_error"))
    reply, finish = _reply(out)
    usage = Usage(
        prompt_tokens=out.prompt_tokens,
        completion_tokens=out.completion_tokens,
        total_tokens=out.prompt_tokens + out.completion_tokens,
    )
    body = ChatResponse(
        id=rid,
        created=created,
        model=mid,
        choices=[Choice(message=reply, finish_reason=finish)],
        usage=usage,
    )
    _count(out, "false", clock)
    await _log(st, mid, req, reply, cid, t0)
    return Response(
        orjson.dumps(body.model_dump(mode="json")),
        media_type="application/json",
        headers={"X-Conversation-Id": cid},
    )


def _count(out: Output, stream: str, clock: float) -> None:
    m.REQUESTS.labels("200", stream).inc()
    m.SECONDS.labels(stream).observe(time.perf_counter() - clock)
    m.TOKENS.labels("prompt").inc(out.prompt_tokens)
    m.TOKENS.labels("completion").inc(out.completion_tokens)


async def _stream(
    st: State, served: Served[Engine], req: ChatRequest, max_new: int, ctx: tuple[Any, ...]
) -> AsyncIterator[bytes]:
    """Text deltas as they come; text from a fence on is held back until the end, then sent
    as ``tool_calls`` when it parses as calls, else as text."""
    rid, created, cid, t0, clock = ctx
    engine, mid = served.engine, served.model_id

    def chunk(delta: Delta, finish: Any = None, usage: Usage | None = None) -> bytes:
        choice = ChunkChoice(delta=delta, finish_reason=finish)
        return sse(ChatChunk(id=rid, created=created, model=mid, choices=[choice], usage=usage))

    yield chunk(Delta(role="assistant", content=""))
    pieces, done = await asyncio.to_thread(engine.stream, req, max_new)
    text, sent = "", 0
    while (piece := await asyncio.to_thread(next, pieces, None)) is not None:
        text += piece
        held = fence_start(text[sent:])
        upto = len(text) if held < 0 else sent + held
        if upto > sent:
            yield chunk(Delta(content=text[sent:upto]))
            sent = upto
    if not done:  # generate raised on its thread: end the stream without a finish chunk
        m.REQUESTS.labels("500", "true").inc()
        log.warning("generation failed mid-stream (conversation %s)", cid)
        return
    out = done[0]
    reply, finish = _reply(out)
    if reply.tool_calls:
        calls = [
            ToolCallDelta(index=i, id=c.id, function=c.function)
            for i, c in enumerate(reply.tool_calls)
        ]
        yield chunk(Delta(tool_calls=calls))
    elif len(text) > sent:
        yield chunk(Delta(content=text[sent:]))
    yield chunk(Delta(), finish)
    if req.include_usage():
        usage = Usage(
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
            total_tokens=out.prompt_tokens + out.completion_tokens,
        )
        yield sse(ChatChunk(id=rid, created=created, model=mid, choices=[], usage=usage))
    yield SSE_DONE
    _count(out, "true", clock)
    await _log(st, mid, req, reply, cid, t0)


async def models(request: Request) -> Response:
    st: State = request.app.state.rl
    served = st.served
    item = {
        "id": served.model_id if served else st.model_id,
        "object": "model",
        "created": int(st.started),
        "owned_by": "rlstream",
    }
    return JSONResponse({"object": "list", "data": [item]})


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok\n")


async def readyz(request: Request) -> Response:
    st: State = request.app.state.rl
    if st.served is None:
        return PlainTextResponse(f"{st.error or 'model loading'}\n", status_code=503)
    return PlainTextResponse("ready\n")


async def metrics(request: Request) -> Response:
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


def _load_failed(status: int, message: str) -> Response:
    return _json(status, {"error": {"message": message, "type": LOAD_FAILED}})


async def swap_adapter(request: Request) -> Response:
    """Load the named model off the request path, then serve it (200 once it serves); a
    failed load answers 422/500 and the previous model keeps serving."""
    st: State = request.app.state.rl
    if st.admin_token is not None:
        given = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(given, f"Bearer {st.admin_token}".encode()):
            return _json(401, error_body("the admin token is missing or wrong", "unauthorized"))
    swap_load = st.swap_load
    if swap_load is None:
        return _json(404, error_body("this server does not hot-swap models", "not_found"))
    try:
        ask = AdapterSwap.model_validate(orjson.loads(await request.body()))
    except (orjson.JSONDecodeError, ValidationError) as exc:
        return _json(400, error_body(f"bad request: {str(exc).splitlines()[0]}"))

    def load() -> Engine:
        full, adapter = locate(ask.model_path)
        return swap_load(full, adapter)

    job = st.swapper.swap(ask.model_id, load, source=ask.model_path, promotion_id=ask.promotion_id)
    try:  # shielded: a caller that gives up does not abandon a half-done swap
        done = await asyncio.shield(job)
    except AdapterLoadError as exc:
        return _load_failed(exc.status, str(exc))
    st.error = None
    return _json(200, {"model_id": done.model_id, "previous": done.previous, "load_s": done.load_s})


def build_app(st: State) -> Starlette:
    async def load() -> None:
        try:
            await st.swapper.swap(st.model_id, st.load, initial=True)
            log.info("model %s ready", st.model_id)
        except AdapterLoadError as exc:  # readiness says why; the process stays up to say it
            st.error = f"model failed to load: {exc.__cause__ or exc}"
            log.error(st.error)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if st.sink is not None:
            await st.sink.start()
        task = asyncio.create_task(load())
        try:
            yield
        finally:
            task.cancel()
            if st.sink is not None:
                await st.sink.stop()

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", completions, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route(ADAPTER_PATH, swap_adapter, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.rl = st
    return app
