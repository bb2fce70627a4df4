"""Ingest throughput: conversations per CPU-second of ``Ingestor.process_bytes``.

    .venv/bin/python bench/ingest_throughput.py [--n 1000] [--seed 0] [--passes 5] [--profile]

Seeded, realistic conversations (``rlstream.sampledata.generate_transcripts``: support
conversations with tool calls and planted PII, maths conversations) are emitted as OpenAI
chat records (``rlstream.formats.to_format(t, "openai")``) and serialised to bytes: exactly
what the streaming ingest service reads off Kafka. Each pass streams the same records through
one ``Ingestor`` after clearing the PII span cache, so the cache only helps with strings that
really repeat inside one stream (system prompts, stock tool results). CPU time is taken per
chunk of 50 conversations and the fastest pass of each chunk counts: on a shared 2-core box
other processes disturb some chunks of every pass, and this keeps A/B runs comparable.

The last row times ``Transcript.model_validate_json`` on the ingested output: what the grader
pays per conversation to read a transcript back off the transcripts topic.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import time
from collections.abc import Callable
from functools import partial

import orjson

from rlstream.formats import to_format
from rlstream.ingest import IngestOptions, Ingestor
from rlstream.pii import detectors
from rlstream.sampledata import generate_transcripts
from rlstream.transcript.model import Transcript

DOMAINS = ("support", "math")
CHUNK = 50


def records(seed: int, n: int, domain: str) -> list[bytes]:
    ts, _ = generate_transcripts(seed, max(1, n // 8), 8, domain)
    return [orjson.dumps(to_format(t, "openai")) for t in ts]


def _clear_caches() -> None:
    detectors._find_cached.cache_clear()


def _cpu(fn: Callable[[], object]) -> float:
    gc.collect()
    gc.disable()
    try:
        c0 = time.process_time()
        fn()
        return time.process_time() - c0
    finally:
        gc.enable()


def run_ingest(data: list[bytes], redact: bool) -> list[Transcript]:
    ing = Ingestor(IngestOptions(redact=redact))
    return [ing.process_bytes(d) for d in data]


def _load_all(data: list[bytes]) -> list[Transcript]:
    return [Transcript.model_validate_json(b) for b in data]


def _chunked_min(data: list[bytes], fn: Callable[[list[bytes]], object], passes: int) -> float:
    """CPU seconds per item: each pass repeats the same work from cleared caches; per chunk
    the fastest pass counts (the shared bench machine disturbs some chunks of every pass)."""
    chunks = [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)]
    best = [float("inf")] * len(chunks)
    for _ in range(passes):
        _clear_caches()
        for i, chunk in enumerate(chunks):
            best[i] = min(best[i], _cpu(partial(fn, chunk)))
    return sum(best) / len(data)


def _ingest_stream(redact: bool) -> Callable[[list[bytes]], object]:
    ing = Ingestor(IngestOptions(redact=redact))
    return lambda chunk: [ing.process_bytes(d) for d in chunk]


def bench(seed: int, n: int, passes: int) -> list[tuple[str, int, float]]:
    rows: list[tuple[str, int, float]] = []
    sets = {d: records(seed, n, d) for d in DOMAINS}
    for domain in DOMAINS:
        data = sets[domain]
        for redact in (True, False):
            per = _chunked_min(data, _ingest_stream(redact), passes)
            rows.append((f"{domain:8s} process_bytes redact={redact!s:5s}", len(data), per))
    for domain in DOMAINS:
        out = [t.dump_json() for t in run_ingest(sets[domain], True)]
        per = _chunked_min(out, _load_all, passes)
        rows.append((f"{domain:8s} Transcript.model_validate_json", len(out), per))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="conversations per domain")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="cProfile one redacting support run")
    args = ap.parse_args()
    if args.profile:
        data = records(args.seed, args.n, "support")
        _clear_caches()
        prof = cProfile.Profile()
        prof.enable()
        run_ingest(data, True)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        return
    rows = bench(args.seed, args.n, args.passes)
    print(f"{'case':52s} {'convs':>6s} {'us/conv':>9s} {'conv/CPU-s':>11s}")
    for name, n, per in rows:
        print(f"{name:52s} {n:6d} {per * 1e6:9.1f} {1 / per:11.0f}")


if __name__ == "__main__":
    main()
