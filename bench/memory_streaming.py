"""Peak memory of streaming ingest against input size: it should stay flat.

Each (size, format, compression) cell runs ``rlstream.ingest.ingest_paths`` over one file in
a fresh subprocess and reports that process's peak RSS (``resource.getrusage`` maxrss) and
its RSS after imports, so the import footprint is not mistaken for data held in memory.
The slope (MB of peak RSS per 100 MB of input, least squares over sizes) is the number that
must be ~0 for a streaming reader; a reader that loads the file grows ~100 MB per 100 MB.

    python bench/memory_streaming.py                 # 10, 100, 500 MB
    python bench/memory_streaming.py --sizes 1,5     # quick
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, header, print_table

DATA_DIR = Path(os.environ.get("RLSTREAM_BENCH_DATA", ROOT / ".cache" / "bench-data"))
FORMATS = ("jsonl", "json")
COMPRESSIONS = ("plain", "gz")


def _conversation(rng: random.Random, i: int) -> dict[str, object]:
    """One OpenAI-chat-shaped conversation (~1.3 kB) with a tool call and a task id."""
    task = i // 8
    order = rng.randint(10000, 99999)
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(20, 60)))
    return {
        "id": f"conv-{i}",
        "metadata": {"task_id": f"task-{task}", "agent_version": "v1"},
        "messages": [
            {"role": "system", "content": "You are an order-support agent. Use the tools."},
            {"role": "user", "content": f"Where is my order {order}? {words[:80]}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {
                            "name": "lookup_order",
                            "arguments": json.dumps({"order_id": str(order)}),
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"call_{i}", "content": '{"status": "shipped"}'},
            {"role": "assistant", "content": f"Your order {order} has shipped. {words}"},
        ],
    }


_WORDS = [
    "order",
    "shipped",
    "refund",
    "thanks",
    "please",
    "package",
    "tracking",
    "delivery",
    "soon",
    "today",
    "account",
    "payment",
    "card",
    "charge",
    "twice",
    "sorry",
    "help",
    "update",
    "status",
    "address",
    "label",
    "carrier",
]


def make_file(size_mb: int, fmt: str, compression: str) -> Path:
    """Write (once; cached under .cache/bench-data) a seeded input of ~size_mb uncompressed."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    path = DATA_DIR / f"conv-{size_mb}mb.{fmt}{'.gz' if compression == 'gz' else ''}"
    if path.exists():
        return path
    tmp = path.with_suffix(path.suffix + ".part")
    rng = random.Random(size_mb)
    target = size_mb * 1_000_000
    if compression == "gz":
        f = gzip.open(tmp, "wt", encoding="utf-8", compresslevel=6)  # noqa: SIM115
    else:
        f = open(tmp, "w", encoding="utf-8")  # noqa: SIM115
    with f:
        written, i = 0, 0
        if fmt == "json":
            f.write("[\n")
        while written < target:
            line = json.dumps(_conversation(rng, i))
            if fmt == "json":
                line = ("" if i == 0 else ",\n") + line
            else:
                line += "\n"
            f.write(line)
            written += len(line)
            i += 1
        if fmt == "json":
            f.write("\n]\n")
    tmp.rename(path)
    return path


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kB


def child(path: Path, options: str | None = None) -> None:
    """Runs in the fresh subprocess: ingest one file, print one JSON line."""
    from rlstream.ingest import IngestOptions, ingest_paths
    from rlstream.transcript import Transcript

    opts = IngestOptions.model_validate_json(options) if options else None

    base = _rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    n = rejects = 0
    for item in ingest_paths([path], opts):
        if isinstance(item, Transcript):
            n += 1
        else:
            rejects += 1
    out = {
        "records": n,
        "rejects": rejects,
        "base_mb": base,
        "peak_mb": _rss_mb(),
        "wall_s": time.perf_counter() - t0,
        "cpu_s": time.process_time() - c0,
    }
    print(json.dumps(out))


def measure(path: Path, options: str | None = None) -> dict[str, float]:
    extra = ["--ingest-options", options] if options else []
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(path), *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"child failed on {path}:\n{proc.stderr[-3000:]}")
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys against xs."""
    if len(xs) < 2:
        return float("nan")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def _streams(peak_mb: float, input_mb: int) -> str:
    if input_mb < 100:
        return "input too small to tell streaming from loading"
    return "streams: peak well below input size" if peak_mb < input_mb / 2 else "NOT streaming"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10,100,500", help="input sizes in MB (uncompressed)")
    parser.add_argument("--size", type=int, help="a single size in MB (smoke runs)")
    parser.add_argument("--formats", default=",".join(FORMATS), help="jsonl,json")
    parser.add_argument("--compressions", default=",".join(COMPRESSIONS), help="plain,gz")
    parser.add_argument(
        "--ingest-options",
        help="IngestOptions as JSON, e.g. '{\"dedupe\": false}' to leave out the run-wide dedupe set",
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.ingest_options)
        return
    sizes = [args.size] if args.size else [int(s) for s in args.sizes.split(",") if s]
    header("streaming ingest: peak RSS vs input size (fresh process per cell)")
    rows: list[list[Any]] = []
    worst_slope = 0.0
    slopes = []
    if args.ingest_options:
        print(f"# IngestOptions: {args.ingest_options}")
    for fmt in [f for f in args.formats.split(",") if f]:
        for comp in [c for c in args.compressions.split(",") if c]:
            peaks: list[float] = []
            for size in sizes:
                path = make_file(size, fmt, comp)
                r = measure(path, args.ingest_options)
                peaks.append(r["peak_mb"])
                print(f"# {fmt}/{comp} {size} MB: {r}", file=sys.stderr, flush=True)
                rows.append(
                    [
                        f"{fmt}/{comp}",
                        size,
                        f"{path.stat().st_size / 1e6:.1f}",
                        int(r["records"]),
                        int(r["rejects"]),
                        r["base_mb"],
                        r["peak_mb"],
                        r["peak_mb"] - r["base_mb"],
                        size / max(r["cpu_s"], 1e-9),
                    ]
                )
            s = slope([float(x) for x in sizes], peaks) * 100
            slopes.append((f"{fmt}/{comp}", s))
            worst_slope = max(worst_slope, s) if s == s else worst_slope
    print_table(
        [
            "input",
            "MB",
            "file MB",
            "records",
            "rejects",
            "RSS after import MB",
            "peak RSS MB",
            "peak-import MB",
            "MB/cpu-s",
        ],
        rows,
    )
    print()
    for name, s in slopes:
        print(f"slope {name}: {s:+.2f} MB peak RSS per 100 MB input")
    biggest = max(sizes)
    top = max(r[6] for r in rows if r[1] == biggest)
    print(f"largest input {biggest} MB: peak RSS {top:.1f} MB ({_streams(top, biggest)})")
    verdict = "flat" if worst_slope < 5 else "GROWS WITH INPUT"
    print(
        f"memory slope (worst): {worst_slope:+.2f} MB per 100 MB input -> {verdict} (target < 5 MB/100 MB)"
    )


if __name__ == "__main__":
    main()
