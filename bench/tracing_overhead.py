"""What tracing costs the consumer path: BatchRunner.run over batches of raw records, each
published once through the outbox (a fake producer: no broker), tracing off vs on.

    .venv/bin/python bench/tracing_overhead.py --records 20000 --batch 500

Modes: ``off`` (the default: no SDK configured), ``on`` (the SDK with a batch processor and
the OTLP protobuf encoding of every span, the bytes then dropped: what a service spends
before the network), ``on-10%`` (``OTEL_TRACES_SAMPLER=parentbased_traceidratio``, 0.1:
the half of the records that carry a sampled upstream ``traceparent`` are still recorded,
as the parent decided). Per record, the wrapper makes a stage span and injects one
``traceparent``; per batch, one batch span. CPU microseconds per record (the export
thread's included), best of repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import measure
from fakes.kafka import Producer
from rlstream.delivery import BatchRunner, Rejected
from rlstream.observability import Health, tracing


class Rec:
    __slots__ = ("headers", "key", "offset", "partition", "timestamp", "topic", "value")

    def __init__(self, offset: int, traced: bool) -> None:
        self.topic, self.partition, self.offset, self.timestamp = "raw", 0, offset, 0
        self.key = b"k%d" % offset
        self.value = b'{"conversation_id": "c%d", "messages": []}' % offset
        tp = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        self.headers = [("traceparent", tp)] if traced else []


class Msg:
    def __init__(self, recs: tuple[Rec, ...]) -> None:
        self.raw_message = recs

    async def ack(self) -> None:
        return None

    async def nack(self) -> None:
        return None


class _EncodeAndDrop:
    """An exporter that does the OTLP exporter's CPU work (protobuf encoding), no I/O."""

    def export(self, spans: Any) -> Any:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.trace.export import SpanExportResult

        encode_spans(spans).SerializeToString()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def run(batches: list[tuple[Rec, ...]]) -> None:
    r = BatchRunner("ingest", Health(), base_backoff_s=0.0)
    r.producer = Producer()  # type: ignore[assignment]

    async def handle(recs: Any) -> list[Rejected]:
        box = r.outbox()
        for rec in recs:
            await box.add("out", rec.key, rec.value, parent=rec)
        await box.flush()
        return []

    async def go() -> None:
        for b in batches:
            await r.run(Msg(b), handle)

    asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    recs = [Rec(i, traced=i % 2 == 0) for i in range(a.records)]
    batches = [tuple(recs[i : i + a.batch]) for i in range(0, len(recs), a.batch)]
    results: dict[str, float] = {}
    off = measure(lambda: run(batches), repeats=a.repeats)
    results["off"] = off.cpu_s / a.records * 1e6
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        print(f"off: {results['off']:.1f} us/record")
        print("tracing_overhead: the tracing extra is not installed: only 'off' measured")
        return
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    for mode, sampler in (("on", None), ("on-10%", ParentBased(TraceIdRatioBased(0.1)))):
        provider = TracerProvider(sampler=sampler)
        provider.add_span_processor(
            BatchSpanProcessor(_EncodeAndDrop(), max_queue_size=a.records * 2)  # type: ignore[arg-type]
        )
        tracing.install(provider, "ingest")

        def traced(provider: Any = provider) -> None:
            run(batches)
            provider.force_flush()  # the export thread's encoding counts too

        on = measure(traced, repeats=a.repeats)
        tracing.shutdown()
        results[mode] = on.cpu_s / a.records * 1e6
    print(f"{'mode':<8} {'us/record':>10}")
    for mode, us in results.items():
        print(f"{mode:<8} {us:>10.1f}")
    print(
        f"tracing_overhead: on costs {results['on'] - results['off']:.1f} us/record more than off "
        f"({results['on'] / results['off']:.2f}x the wrapper + outbox path; "
        f"batch {a.batch}, {a.records} records)"
    )


if __name__ == "__main__":
    main()
