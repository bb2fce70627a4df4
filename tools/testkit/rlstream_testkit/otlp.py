"""A tiny OTLP/HTTP trace receiver: what a collector gets from rlstream's processes.

An in-memory exporter cannot be read across processes; every service of a test exports
here instead (``RLSTREAM_TRACING=otlp``, ``RLSTREAM_OTLP_ENDPOINT=receiver.endpoint``),
and the test reads the decoded spans. Protobuf bodies only (the exporter's default), gzip
or not.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Span:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    #: (trace id, span id) of each link
    links: tuple[tuple[str, str], ...]
    attributes: dict[str, Any]
    error: bool


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def decode(body: bytes) -> list[Span]:
    """The spans of one ExportTraceServiceRequest."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    req = ExportTraceServiceRequest()
    req.ParseFromString(body)
    out = []
    for rs in req.resource_spans:
        res = {a.key: _value(a.value) for a in rs.resource.attributes}
        for ss in rs.scope_spans:
            for s in ss.spans:
                out.append(
                    Span(
                        service=str(res.get("service.name", "")),
                        name=s.name,
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_span_id=s.parent_span_id.hex(),
                        links=tuple((lk.trace_id.hex(), lk.span_id.hex()) for lk in s.links),
                        attributes={a.key: _value(a.value) for a in s.attributes},
                        error=s.status.code == 2,  # STATUS_CODE_ERROR
                    )
                )
    return out


class OtlpReceiver:
    """``with OtlpReceiver() as rx``: listens on 127.0.0.1, collects every span posted."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.requests = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                spans = decode(body) if self.path.endswith("/v1/traces") else []
                with receiver._lock:
                    receiver.spans += spans
                    receiver.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def snapshot(self) -> list[Span]:
        with self._lock:
            return list(self.spans)

    def wait_for(self, pred: Callable[[list[Span]], bool], timeout: float = 30.0) -> list[Span]:
        """The spans once ``pred`` holds for them (else, after ``timeout``, as they are)."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.snapshot()
            if pred(spans) or time.monotonic() > deadline:
                return spans
            time.sleep(0.2)
