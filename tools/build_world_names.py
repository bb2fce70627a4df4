"""Write the compact world first-name / surname lists of :mod:`rlstream.pii.lexicon` from
the ``names-dataset`` package (105 countries; Apache-2.0), so the installed package need
not load its 1.9 GB of tables: the names ranked in the top ``--rank`` of at least one
country, lower-cased, one a line, gzip-compressed, sorted (deterministic output).

    .venv/bin/python tools/build_world_names.py --rank 5000
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

from names_dataset import NameDataset

OUT = Path(__file__).resolve().parents[1] / "shared" / "rlstream" / "pii" / "data"


def _top(table: dict[str, dict[str, dict[str, int]]], rank: int) -> list[str]:
    keep = set()
    for name, info in table.items():
        ranks = info.get("rank") or {}
        if ranks and min(ranks.values()) <= rank and len(name) > 1 and name.isalpha():
            keep.add(name.lower())
    return sorted(keep)


def _write(path: Path, words: list[str]) -> None:
    data = ("\n".join(words) + "\n").encode("utf-8")
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(data)
    print(f"{path.name}: {len(words)} names, {path.stat().st_size / 1e6:.2f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rank", type=int, default=5000)
    args = ap.parse_args()
    nd = NameDataset()
    _write(OUT / "world_first_names.txt.gz", _top(nd.first_names, args.rank))
    _write(OUT / "world_surnames.txt.gz", _top(nd.last_names, args.rank))


if __name__ == "__main__":
    main()
