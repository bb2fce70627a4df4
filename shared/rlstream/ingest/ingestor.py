"""Record -> redacted, keyed Transcript; and whole files -> transcripts + rejects + summary.

``Ingestor.process`` is the per-record step the streaming ingest service runs for each Kafka
message and the CLI runs for each line, so both paths share one behaviour. ``ingest_paths``
adds file reading, duplicate dropping, reject accounting and the ``max_rejects`` guard.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rlstream import limits
from rlstream.errors import InputError, SchemaViolation, TooManyRejectsError
from rlstream.fastmodel import replaced
from rlstream.formats import content_hash, parse_record
from rlstream.ingest.ids import bound_ids
from rlstream.ingest.models import IngestOptions, IngestSummary, Reject
from rlstream.ingest.reader import EXCERPT, FileReader, RawItem, expand_paths, file_size
from rlstream.ingest.seen import CompactSeenSet
from rlstream.ingest.subjects import pseudonymise_subjects, subject_values
from rlstream.pii.fields import redact_fields
from rlstream.pii.redact import Redactor, redact_transcript
from rlstream.taskkey.resolve import TaskKeyResolver
from rlstream.transcript.model import SourceRef, Transcript

PROGRESS_EVERY = 1000
log = logging.getLogger(__name__)


class Ingestor:
    """Parse + redact + task key for one record at a time (stateful only for near-dup merge)."""

    def __init__(self, options: IngestOptions | None = None) -> None:
        self.options = options or IngestOptions()
        field = self.options.task_key_field or (
            self.options.mapping.task_key_field if self.options.mapping else None
        )
        self.resolver = TaskKeyResolver(
            field=field,
            near_dup_merge=self.options.near_dup_merge,
            threshold=self.options.near_dup_threshold,
        )
        #: PII replacements per type over every record processed
        self.pii_found: dict[str, int] = {}

    def process(self, record: Mapping[str, Any], source: SourceRef | None = None) -> Transcript:
        """One raw record -> Transcript. Raises InputError subclasses for a bad record."""
        try:
            t = parse_record(record, self.options.format, self.options.mapping)
            subjects = subject_values(t.metadata, self.options.subject_fields)
            if self.options.redact:
                redactor = Redactor()
                t = redact_transcript(t, redactor)
                for kind, n in redactor.found.items():
                    self.pii_found[kind] = self.pii_found.get(kind, 0) + n
            t = self.resolver.apply(t, raw=record)
            if self.options.redact:  # ids, names, keys: see rlstream.pii.fields, docs/pii.md
                t = redact_fields(t, redactor)  # one placeholder numbering per record
                t = pseudonymise_subjects(t, subjects)
            t = bound_ids(t)  # after redaction: a digest of a PII-free id, never of the raw one
        except RecursionError as exc:
            raise SchemaViolation("record is nested too deeply to ingest") from exc
        if source is not None:
            t = replaced(t, {"source": source})
        return t

    def process_bytes(self, data: bytes, source: SourceRef | None = None) -> Transcript:
        """A raw message body (a Kafka value) -> Transcript; size and JSON checked first."""
        o = self.options
        record = limits.loads(data, max_depth=o.max_depth, max_bytes=o.max_record_bytes)
        return self.process(record, source)


def _excerpt(record: Any) -> str:
    return limits.excerpt(record, EXCERPT)


class IngestRun(Iterator[Transcript | Reject]):
    """Iterate to ingest; ``summary`` fills in as you go and is final once exhausted."""

    def __init__(
        self,
        paths: Iterable[str | Path],
        options: IngestOptions | None = None,
        on_progress: Callable[[IngestSummary], None] | None = None,
        ingestor: Ingestor | None = None,
    ) -> None:
        self.ingestor = ingestor or Ingestor(options)
        self.options = self.ingestor.options
        self.paths = expand_paths(paths)
        self.summary = IngestSummary(bytes_total=sum(file_size(p) for p in self.paths))
        self.on_progress = on_progress
        # compact: these live for the whole run, so they must not cost ~70 B per record
        self._seen = CompactSeenSet()
        self._contents = CompactSeenSet()  # id + content digest: tells redelivery from conflict
        self._groups = CompactSeenSet()
        self._it = self._run()

    def __next__(self) -> Transcript | Reject:
        return next(self._it)

    def __iter__(self) -> IngestRun:
        return self

    def _reject(self, source: SourceRef, code: str, reason: str, excerpt: str) -> Reject:
        s = self.summary
        s.rejected += 1
        s.rejects_by_code[code] = s.rejects_by_code.get(code, 0) + 1
        if self.options.redact:  # reject files are storage too: no raw PII in them
            redactor = Redactor()
            reason, excerpt = redactor.text(reason), redactor.text(excerpt)
        if self.options.max_rejects is not None and s.rejected > self.options.max_rejects:
            raise TooManyRejectsError(
                f"{s.rejected} records rejected (limit {self.options.max_rejects}); "
                f"last at {source.label()}: {code}: {reason}"
            )
        return Reject(source=source, error_code=code, reason=reason, raw_excerpt=excerpt)

    def _handle(self, item: RawItem) -> Transcript | Reject | None:
        s = self.summary
        s.read += 1
        if item.error is not None:
            return self._reject(item.source, item.error.code, str(item.error), item.excerpt)
        try:
            t = self.ingestor.process(item.record, item.source)
        except InputError as exc:
            return self._reject(item.source, exc.code, str(exc), _excerpt(item.record))
        except Exception as exc:  # a bug must not sink a multi-GB run: count it, keep going
            log.exception("unexpected error ingesting %s", item.source.label())
            reason = f"{type(exc).__name__}: {exc}"
            return self._reject(item.source, "internal_error", reason, _excerpt(item.record))
        if self.options.dedupe:
            cid = t.conversation_id
            new_id = self._seen.add(cid)
            new_content = self._contents.add(f"{cid}\x00{content_hash(item.record)}")
            if not new_id and not new_content:  # the same record again (redelivery)
                s.duplicates += 1
                return None
            if not new_id:  # same id, other content: say so instead of dropping it unseen
                reason = (
                    f"conversation id {cid!r} was already ingested with different content; "
                    "this record was not ingested (give it its own id or fix the source)"
                )
                return self._reject(
                    item.source, "duplicate_id_conflict", reason, _excerpt(item.record)
                )
        s.ok += 1
        s.by_format[t.format] = s.by_format.get(t.format, 0) + 1
        rule = t.task_key_rule or "none"
        s.task_key_rules[rule] = s.task_key_rules.get(rule, 0) + 1
        if t.task_key is not None and self._groups.add(t.task_key):
            s.task_key_groups[rule] = s.task_key_groups.get(rule, 0) + 1
        return t

    def _run(self) -> Iterator[Transcript | Reject]:
        s = self.summary
        done_bytes = 0
        for path in self.paths:
            s.files += 1
            reader = FileReader(path, self.options.max_record_bytes, self.options.max_depth)
            try:
                for item in reader:
                    out = self._handle(item)
                    if out is not None:
                        yield out
                    if s.read % PROGRESS_EVERY == 0:
                        s.bytes_read = done_bytes + reader.position()
                        if self.on_progress is not None:
                            self.on_progress(s)
            except OSError as exc:
                src = SourceRef(kind="file", file=path)
                yield self._reject(src, "unreadable_file", str(exc), "")
            done_bytes += file_size(path)
            s.bytes_read = done_bytes
        s.pii_found = dict(sorted(self.ingestor.pii_found.items()))
        if self.on_progress is not None:
            self.on_progress(s)


def ingest_paths(
    paths: Iterable[str | Path],
    options: IngestOptions | None = None,
    on_progress: Callable[[IngestSummary], None] | None = None,
) -> IngestRun:
    """Stream transcripts and rejects out of files; ``.summary`` on the returned run."""
    return IngestRun(paths, options, on_progress)
