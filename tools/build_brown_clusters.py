"""Write the Brown word clusters of :mod:`rlstream.pii.tagger` (``data/brown_clusters.txt.gz``)
from the English lexicon of NLP4J 1.1.3 (Maven Central ``edu.emory.mathcs.nlp:nlp4j-english``,
Apache-2.0: ``en-brown-clusters-simplified-lowercase.xz``, 594,491 words in 1,500 clusters),
dumped to ``word<TAB>path`` by ``tools/brown/DumpBrown.java``.

Kept: the words the tagger can meet in its lists or its training data (the census, world,
ordinary-word, SCOWL size 70, proper-noun and place lists, and every token of
``tools/data/ner``): 232,932 words, 1 MB gzip, ~25 MB in memory instead of ~60 MB for all.

    mvn -q dependency:copy -Dartifact=edu.emory.mathcs.nlp:nlp4j-english:1.1.3 -DoutputDirectory=.
    unzip -j nlp4j-english-1.1.3.jar 'edu/emory/mathcs/nlp/lexica/en-brown-clusters-simplified-lowercase.xz'
    javac -cp xz-1.5.jar tools/brown/DumpBrown.java -d /tmp/brown   # org.tukaani:xz:1.5
    java -cp xz-1.5.jar:/tmp/brown DumpBrown en-brown-clusters-simplified-lowercase.xz /tmp/brown/en
    apt-get download wamerican-large && dpkg-deb -x wamerican-large_*.deb /tmp/w
    .venv/bin/python tools/build_brown_clusters.py /tmp/brown/en.tsv \\
        /tmp/w/usr/share/dict/american-english-large
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from rlstream.pii.lexicon import (
    common_words,
    first_names,
    places,
    proper_nouns,
    surnames,
    world_first_names,
    world_surnames,
)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "shared" / "rlstream" / "pii" / "data" / "brown_clusters.txt.gz"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("clusters", type=Path, help="word<TAB>path, from DumpBrown.java")
    ap.add_argument("scowl_large", type=Path, help="/usr/share/dict/american-english-large")
    args = ap.parse_args()
    keep = set(first_names() | surnames() | world_first_names() | world_surnames())
    keep |= places() | common_words() | proper_nouns()
    keep |= {
        w.strip() for w in args.scowl_large.read_text(encoding="utf-8").split() if w[:1].islower()
    }
    for path in sorted((ROOT / "tools" / "data" / "ner").glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                keep.update(t.lower() for t in json.loads(line)["tokens"])
    rows = []
    for line in args.clusters.read_text(encoding="utf-8").splitlines():
        word, bits = line.split("\t")
        if word in keep:
            rows.append(f"{word}\t{bits}")
    with OUT.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(("\n".join(sorted(rows)) + "\n").encode("utf-8"))
    print(f"{OUT.name}: {len(rows)} words, {OUT.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
