"""Prometheus metrics of ``rlstream serve`` (served at ``/metrics``)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

REQUESTS = Counter(
    "rlstream_serve_requests_total", "Chat-completion requests by outcome", ["status", "stream"]
)
SECONDS = Histogram(
    "rlstream_serve_request_seconds",
    "Time from request to the last token",
    ["stream"],
    buckets=(0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0),
)
TOKENS = Counter("rlstream_serve_tokens_total", "Tokens processed", ["kind"])
LOGGED = Counter(
    "rlstream_serve_logged_total",
    "Served conversations written to the log sink, by result (alarm on failed)",
    ["sink", "result"],
)
SWAPS = Counter(
    "rlstream_serve_adapter_swaps_total",
    "Hot swaps of the served model by result (failed: the previous one kept serving)",
    ["result"],
)
SWAP_SECONDS = Histogram(
    "rlstream_serve_adapter_load_seconds",
    "Time to load the next model of a successful hot swap (the old one serves meanwhile)",
    buckets=(0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0),
)
