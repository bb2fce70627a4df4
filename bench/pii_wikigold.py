"""A second held-out set for free-text names: Wikigold (Wikipedia prose, CC BY 4.0, see
``bench/data/wikigold/README.md``), hand-annotated by others. A PER entity is a NAME gold
span; ORG, LOC and MISC entities are left unlabelled, so a NAME found on them counts against
precision. Sentences are the CoNLL tokens joined by spaces, with no space before closing
punctuation and after opening brackets ("Smith ( born 1950 )" -> "Smith (born 1950)").

Unlike the presidio-research set, this is encyclopaedic prose from a different source than
anything the detectors were written or trained on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pii_public import Example

DATA = Path(__file__).resolve().parent / "data" / "wikigold" / "wikigold.conll.txt"
_NO_SPACE_BEFORE = {".", ",", ";", ":", "!", "?", ")", "]", "'s", "%", "'"}
_NO_SPACE_AFTER = {"(", "[", "$"}


def _sentences() -> Iterator[list[tuple[str, str]]]:
    rows: list[tuple[str, str]] = []
    for line in DATA.read_text(encoding="utf-8").splitlines():
        parts = line.rsplit(" ", 1)
        if len(parts) != 2 or parts[0] == "-DOCSTART-":
            if rows:
                yield rows
            rows = []
            continue
        rows.append((parts[0], parts[1]))
    if rows:
        yield rows


def generate(limit: int = 0) -> Iterator[Example]:
    """Every sentence (the first ``limit`` when given) with its PER spans as NAME."""
    for n, rows in enumerate(_sentences()):
        if limit and n >= limit:
            return
        text = ""
        spans: list[tuple[int, int, str, str]] = []
        prev_tag, prev_tok = "O", ""
        for tok, tag in rows:
            if text and tok not in _NO_SPACE_BEFORE and prev_tok not in _NO_SPACE_AFTER:
                text += " "
            start = len(text)
            text += tok
            if tag.endswith("PER"):
                if prev_tag == "I-PER" and tag == "I-PER" and spans:
                    a, _, kind, label = spans[-1]
                    spans[-1] = (a, len(text), kind, label)
                else:
                    spans.append((start, len(text), "NAME", "wikigold_person"))
            prev_tag, prev_tok = tag, tok
        yield Example(text, tuple(spans))
