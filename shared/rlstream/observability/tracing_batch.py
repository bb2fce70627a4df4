"""The consumer wrapper's spans, and the span contexts a release descends from.

Per consumed record a stage span (``ingest``, ``grade``, ``curate``, ``evaluator``), child
of the context in the record's ``traceparent`` header (a new trace when it has none) and
linked to its batch's span; the batch span (``<service> batch``: the handler, dead
letters, retries) links to every record's upstream context. Everything here is a no-op
while tracing is off (:mod:`rlstream.observability.tracing`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from rlstream.observability import tracing
from rlstream.observability.tracing import RECORD_SPANS, extract, links, record_span

#: span name of a consumed record, per service (the pipeline's stage names)
STAGES = {"ingest": "ingest", "grader": "grade", "curator": "curate"}


class Consumed:
    """The spans of one consumed batch (see the module docstring). Used as a context
    manager around the handler; :meth:`rejected` and :meth:`failed` set the outcome."""

    def __init__(self, service: str, records: Sequence[Any]) -> None:
        self.service = service
        self.records = records
        self._batch: Any = None
        self._spans: dict[int, Any] = {}
        self._use: Any = None
        self._token: Any = None

    def __enter__(self) -> Consumed:
        state = tracing.state()
        if state is None or not self.records:
            return self
        from opentelemetry.context import Context
        from opentelemetry.trace import SpanKind

        uppers = [extract(r.headers) for r in self.records]
        upstream = [state.trace.get_current_span(c).get_span_context() for c in uppers]
        self._batch = state.tracer.start_span(
            f"{self.service} batch",
            context=Context(),
            kind=SpanKind.CONSUMER,
            links=links(upstream),
            attributes={
                "messaging.system": "kafka",
                "messaging.operation.type": "process",
                "messaging.batch.message_count": len(self.records),
                "rlstream.service": self.service,
            },
        )
        batch_link = links([self._batch.get_span_context()])
        name = STAGES.get(self.service, self.service)
        for r, ctx in zip(self.records, uppers, strict=True):
            self._spans[id(r)] = state.tracer.start_span(
                name,
                context=ctx,
                kind=SpanKind.CONSUMER,
                links=batch_link,
                attributes={  # few: each one costs every record (docs/tracing.md)
                    "messaging.destination.name": r.topic,
                    "messaging.destination.partition.id": str(r.partition),
                    "messaging.kafka.offset": r.offset,
                },
            )
        self._token = RECORD_SPANS.set(self._spans)
        self._use = state.trace.use_span(self._batch, end_on_exit=False)
        self._use.__enter__()
        return self

    def rejected(self, rejected: Iterable[Any]) -> None:
        """Mark the stage spans of dead-lettered records failed, with the reason."""
        if not self._spans:
            return
        from opentelemetry.trace import Status, StatusCode

        for rej in rejected:
            s = self._spans.get(id(rej.record))
            if s is not None:
                s.set_attribute("rlstream.dead_letter", rej.verdict.code)
                s.set_status(Status(StatusCode.ERROR, f"dead-lettered: {rej.verdict.code}"))

    def failed(self, code: str) -> None:
        """The batch failed as a whole (it will be retried or isolated)."""
        if self._batch is None:
            return
        from opentelemetry.trace import Status, StatusCode

        self._batch.set_status(Status(StatusCode.ERROR, f"batch failed: {code}"))
        for s in self._spans.values():
            s.set_status(Status(StatusCode.ERROR, f"batch failed: {code}"))

    def __exit__(self, *exc: object) -> None:
        if self._batch is None:
            return
        self._use.__exit__(None, None, None)
        RECORD_SPANS.reset(self._token)
        for s in self._spans.values():
            s.end()
        self._batch.end()


def consume(service: str, records: Sequence[Any]) -> Consumed:
    """The spans of a batch ``service`` consumes (nothing when tracing is off)."""
    return Consumed(service, records if tracing.active() else ())


class ContextMemory:
    """Span contexts of recent inputs by id, in arrival order (bounded): what the
    curator's release, which runs outside any consumed batch, links to and descends from."""

    def __init__(self, max_entries: int = 50_000) -> None:
        self.max_entries = max_entries
        self._seq = 0
        self._by_id: OrderedDict[str, tuple[int, Any]] = OrderedDict()

    def remember(self, key: str, record: Any) -> None:
        """Remember the stage span context of ``record`` (of the current batch) as ``key``."""
        s = record_span(record) if tracing.active() else None
        if s is None:
            return
        self._seq += 1
        self._by_id[key] = (self._seq, s.get_span_context())
        self._by_id.move_to_end(key)
        while len(self._by_id) > self.max_entries:
            self._by_id.popitem(last=False)

    def parent_and_links(self, keys: Iterable[str]) -> tuple[Any, list[Any]]:
        """(the newest remembered context among ``keys``, all their contexts newest first)."""
        got = sorted((v for k in keys if (v := self._by_id.get(k)) is not None), reverse=True)
        contexts = [c for _, c in got]
        return (contexts[0] if contexts else None), contexts

    def __len__(self) -> int:
        return len(self._by_id)
