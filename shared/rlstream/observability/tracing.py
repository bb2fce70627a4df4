"""OpenTelemetry tracing, off by default: spans per batch and per stage, W3C context on Kafka.

Why here and not in FastStream's middleware: every output leaves through the outbox
(:class:`rlstream.delivery.outbox.Outbox`), not FastStream's publishers, so the context is
injected where the outbox adds a record and extracted where :class:`BatchRunner` gets a
batch. ``RLSTREAM_TRACING=off`` (the default), or the ``tracing`` extra not installed,
leaves every function here a no-op costing one global read.

What a trace holds (docs/tracing.md): the consumer wrapper's spans per batch and per
record (:mod:`rlstream.observability.tracing_batch`), and the stage spans opened with
:func:`span`. Each output record carries the ``traceparent`` of the stage span of the
input it came from (:func:`inject`), else of the current span.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlstream.settings import Settings

log = logging.getLogger("rlstream.tracing")

TRACEPARENT = "traceparent"
#: the environment variables a process is started with to continue a trace (the OTel
#: convention for environment carriers): the training Job, the local trainer child
ENV_TRACEPARENT = "TRACEPARENT"
ENV_TRACESTATE = "TRACESTATE"
#: the SDK's default span link limit (OTEL_SPAN_LINK_COUNT_LIMIT): more are dropped there
MAX_LINKS = 128

Headers = Sequence[tuple[str, bytes | None]]


class _State:
    """The configured tracer: None of this exists while tracing is off."""

    def __init__(self, provider: Any, service: str) -> None:
        from opentelemetry import propagate, trace

        self.provider = provider
        self.service = service
        self.tracer = provider.get_tracer("rlstream")
        self.trace = trace
        self.propagate = propagate


_STATE: _State | None = None
#: id(record) -> its stage span, for the batch being handled (set by :func:`consume`)
RECORD_SPANS: ContextVar[dict[int, Any] | None] = ContextVar("rlstream_record_spans", default=None)


def active() -> bool:
    return _STATE is not None


def state() -> _State | None:
    """The configured tracer and API modules (None: tracing off)."""
    return _STATE


def configure_tracing(service: str, settings: Settings) -> bool:
    """Start exporting spans as ``settings.tracing`` says; True when tracing is on.

    ``otlp``: OTLP over HTTP/protobuf to ``settings.otlp_endpoint`` (the collector's base
    URL; ``/v1/traces`` is added), else where ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT``
    says, else localhost:4318. ``console``: one JSON line per span on stderr. The SDK reads
    the other standard variables itself (``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*``,
    ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_SERVICE_NAME``, ``OTEL_PROPAGATORS``)."""
    mode = settings.tracing
    if mode == "off":
        return False
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        log.warning(
            "RLSTREAM_TRACING=%s but the OpenTelemetry SDK is not installed "
            "(pip install 'rlstream[tracing]'): tracing stays off",
            mode,
        )
        return False
    attrs = {"service.namespace": "rlstream"}
    if not os.environ.get("OTEL_SERVICE_NAME"):
        attrs["service.name"] = f"rlstream-{service}"
    provider = TracerProvider(resource=Resource.create(attrs))
    exporter: Any
    if mode == "console":
        import sys

        exporter = ConsoleSpanExporter(
            out=sys.stderr, formatter=lambda s: s.to_json(indent=None) + "\n"
        )
    else:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            log.warning(
                "RLSTREAM_TRACING=otlp but opentelemetry-exporter-otlp-proto-http is not "
                "installed (pip install 'rlstream[tracing]'): tracing stays off"
            )
            return False
        endpoint = settings.otlp_endpoint
        exporter = OTLPSpanExporter(
            endpoint=endpoint.rstrip("/") + "/v1/traces" if endpoint else None
        )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    install(provider, service)
    log.info("tracing on", extra={"tracing": mode, "otlp_endpoint": settings.otlp_endpoint})
    return True


def install(provider: Any, service: str = "test") -> None:
    """Use ``provider`` (an SDK ``TracerProvider``); tests pass one with an in-memory
    exporter. Not the global provider: rlstream's spans never depend on what else a host
    process configured."""
    global _STATE
    _STATE = _State(provider, service)


def shutdown() -> None:
    """Export what is buffered and stop (a service's shutdown, the trainer's exit)."""
    global _STATE
    state, _STATE = _STATE, None
    if state is not None:
        with contextlib.suppress(Exception):
            state.provider.shutdown()


# ---- carriers ---------------------------------------------------------------------------


class _HeaderGetter:
    """Kafka headers ((str, bytes) pairs) as a propagator carrier."""

    def get(self, carrier: Headers, key: str) -> list[str] | None:
        out = [
            v.decode("utf-8", "replace")
            for k, v in carrier
            if isinstance(k, str) and k.lower() == key and v is not None
        ]
        return out or None

    def keys(self, carrier: Headers) -> list[str]:
        return [k for k, _ in carrier if isinstance(k, str)]


class _HeaderSetter:
    def set(self, carrier: list[tuple[str, bytes]], key: str, value: str) -> None:
        carrier.append((key, value.encode()))


_GETTER, _SETTER = _HeaderGetter(), _HeaderSetter()


def extract(headers: Headers | None) -> Any:
    """The context a record's headers carry (an empty one: a new trace)."""
    assert _STATE is not None
    return _STATE.propagate.extract(headers or (), getter=_GETTER)


def record_span(record: Any) -> Any:
    """The stage span of ``record`` in the batch being handled, or None."""
    spans = RECORD_SPANS.get()
    return None if spans is None else spans.get(id(record))


def inject(headers: Iterable[tuple[str, bytes]], parent: Any = None) -> list[tuple[str, bytes]]:
    """``headers`` plus the ``traceparent`` of ``parent``'s stage span (an input record of
    this batch), else of the current span; unchanged when tracing is off, when there is no
    span, or when they carry a ``traceparent`` already (a replayed record keeps its own)."""
    out = list(headers)
    state = _STATE
    if state is None or any(k == TRACEPARENT for k, _ in out):
        return out
    span = record_span(parent) if parent is not None else None
    ctx = state.trace.set_span_in_context(span) if span is not None else None
    state.propagate.inject(out, context=ctx, setter=_SETTER)
    return out


def env_for_child() -> dict[str, str]:
    """``TRACEPARENT`` (and ``TRACESTATE``) of the current span, for a process started now
    (the training Job, the local trainer); empty when tracing is off or no span is active."""
    if _STATE is None:
        return {}
    carrier: dict[str, str] = {}
    _STATE.propagate.inject(carrier)
    return {k.upper(): v for k, v in carrier.items() if k in (TRACEPARENT, "tracestate")}


def context_from_env(environ: Mapping[str, str] | None = None) -> Any:
    """The context this process was started in (``TRACEPARENT``), or None."""
    if _STATE is None:
        return None
    env = os.environ if environ is None else environ
    carrier = {k.lower(): env[k] for k in (ENV_TRACEPARENT, ENV_TRACESTATE) if env.get(k)}
    return _STATE.propagate.extract(carrier) if carrier else None


# ---- spans ------------------------------------------------------------------------------


@contextlib.contextmanager
def span(
    name: str,
    *,
    parent: Any = None,
    links: Sequence[Any] = (),
    attributes: Mapping[str, Any] | None = None,
) -> Iterator[Any]:
    """A span, current inside the block (None when tracing is off). ``parent``: a context
    or a span context (default: the current span); ``links``: span contexts. An exception
    leaving the block is recorded and marks the span as failed."""
    state = _STATE
    if state is None:
        yield None
        return
    ctx = _as_context(parent)
    with state.tracer.start_as_current_span(
        name,
        context=ctx,
        links=links_(links),
        attributes=dict(attributes or {}),
    ) as s:
        yield s


@contextlib.contextmanager
def activate(record: Any) -> Iterator[None]:
    """Make ``record``'s stage span current inside the block (work done for that record
    alone: its spans and log lines join the record's trace)."""
    s = record_span(record) if _STATE is not None else None
    if s is None:
        yield
        return
    assert _STATE is not None
    with _STATE.trace.use_span(s, end_on_exit=False):
        yield


def set_failed(s: Any, description: str) -> None:
    """Mark span ``s`` failed (no-op for None: tracing off)."""
    if s is None:
        return
    from opentelemetry.trace import Status, StatusCode

    s.set_status(Status(StatusCode.ERROR, description))


def log_ids() -> tuple[str, str] | None:
    """(trace id, span id) in hex of the current span, for the JSON log line."""
    if _STATE is None:
        return None
    ctx = _STATE.trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    return format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")


def _as_context(parent: Any) -> Any:
    if parent is None or _STATE is None:
        return None
    if hasattr(parent, "trace_id"):  # a SpanContext
        from opentelemetry.trace import NonRecordingSpan

        return _STATE.trace.set_span_in_context(NonRecordingSpan(parent))
    return parent


def links(contexts: Iterable[Any]) -> list[Any]:
    """Span links to the valid ones of ``contexts`` (span contexts), at most MAX_LINKS."""
    from opentelemetry.trace import Link

    out = []
    for c in contexts:
        if c is not None and c.is_valid:
            out.append(Link(c))
            if len(out) >= MAX_LINKS:
                break
    return out


links_ = links  # ``span`` has a parameter of that name
