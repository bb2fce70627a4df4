"""Write the ordinary-English word list of :mod:`rlstream.pii.lexicon`
(``data/ordinary_words.txt.gz``) from SCOWL size 50, the list Debian ships as ``wamerican``
(``/usr/share/dict/american-english``; permissive SCOWL licence, copied to
``data/ordinary_words.LICENSE``): its all-lower-case entries, one a line, sorted, gzip
(deterministic output).

Why SCOWL 50 and not Webster's Second (``english-words``, 235k entries): Webster lists
"maria" (lunar seas), "eric" (a fine in old Irish law), "anna", "victor" and "ralph" as
ordinary words, so those names alone were never redacted; SCOWL 50 keeps the words a
modern reader meets ("frank", "grace", "will") and drops most archaic ones.

    apt-get download wamerican && dpkg-deb -x wamerican_*.deb /tmp/w
    .venv/bin/python tools/build_ordinary_words.py /tmp/w/usr/share/dict/american-english
"""

from __future__ import annotations

import argparse
import gzip
import re
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "shared" / "rlstream" / "pii" / "data"
_LOWER_WORD = re.compile(r"[a-z]+")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("words", type=Path, nargs="?", default=Path("/usr/share/dict/american-english"))
    args = ap.parse_args()
    text = args.words.read_text(encoding="utf-8")
    words = sorted({w for w in text.split() if _LOWER_WORD.fullmatch(w)})
    path = OUT / "ordinary_words.txt.gz"
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(("\n".join(words) + "\n").encode("ascii"))
    print(f"{path.name}: {len(words)} words, {path.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
