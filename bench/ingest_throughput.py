"""Ingest throughput: conversations per CPU-second of ``Ingestor.process_bytes``.

    .venv/bin/python bench/ingest_throughput.py [--n 1500] [--seed 0] [--repeats 3] [--profile]

Seeded, realistic conversations (``rlstream.sampledata.generate_transcripts``: support
conversations with tool calls and planted PII, maths conversations) are emitted as OpenAI
chat records (``rlstream.formats.to_format(t, "openai")``) and serialised to bytes: exactly
what the streaming ingest service reads off Kafka. Each repeat feeds a *fresh* set (a
different seed) through a fresh ``Ingestor`` after clearing the PII span cache, so the cache
only helps with strings that really repeat inside one stream (system prompts, stock tool
results), never with a previous repeat's text. The fastest repeat's CPU time is reported.

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


def bench(seed: int, n: int, repeats: int) -> list[tuple[str, int, float]]:
    rows: list[tuple[str, int, float]] = []
    sets = {d: [records(seed + r, n, d) for r in range(repeats)] for d in DOMAINS}
    for domain in DOMAINS:
        for redact in (True, False):
            best = float("inf")
            count = 0
            for data in sets[domain]:
                _clear_caches()
                count = len(data)
                best = min(best, _cpu(partial(run_ingest, data, redact)) / count)
            rows.append((f"{domain:8s} process_bytes redact={redact!s:5s}", count, best))
    for domain in DOMAINS:
        out = [t.dump_json() for t in run_ingest(sets[domain][0], True)]
        best = min(_cpu(partial(_load_all, out)) / len(out) for _ in range(repeats))
        rows.append((f"{domain:8s} Transcript.model_validate_json", len(out), best))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1500, help="conversations per domain and repeat")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3)
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
    rows = bench(args.seed, args.n, args.repeats)
    print(f"{'case':52s} {'convs':>6s} {'us/conv':>9s} {'conv/CPU-s':>11s}")
    for name, n, per in rows:
        print(f"{name:52s} {n:6d} {per * 1e6:9.1f} {1 / per:11.0f}")


if __name__ == "__main__":
    main()
