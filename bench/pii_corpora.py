"""Person-name corpora annotated by others, as :class:`pii_public.Example` (NAME spans).

Files are ``{"tokens": [...], "person": [[start_token, end_token), ...]}`` JSON lines,
gzip-compressed; the tokens are joined as prose ("Smith ( born" -> "Smith (born"). Two kinds:

* ``bench/data/ner``: fresh held-out sets, never used to write or train the name
  detectors: WNUT-17 test (YouTube, Stack Overflow, Twitter, Reddit; CC BY 4.0) and the
  Enron e-mail coreference test split (Apache-2.0); see its README.
* ``tools/data/ner``: the training corpora of ``tools/train_pii_names.py``.

Any other file of the same shape can be scored with ``bench/pii_eval.py --corpus PATH``
(for example CoNLL-2003 test, whose Reuters licence keeps it out of this repository).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

from pii_public import Example

FRESH = Path(__file__).resolve().parent / "data" / "ner"
_NO_SPACE_BEFORE = {".", ",", ";", ":", "!", "?", ")", "]", "'s", "%", "'", "n't", "'m", "'re"}
_NO_SPACE_AFTER = {"(", "[", "$", "#"}


def load(path: Path) -> Iterator[Example]:
    """Each line of ``path`` (gzip or plain JSON lines) as an Example; a span starting with
    an @-handle is IGNORE (counted neither way: handles are not prose names)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            text, starts, ends, prev = "", [], [], ""
            for tok in row["tokens"]:
                if text and tok not in _NO_SPACE_BEFORE and prev not in _NO_SPACE_AFTER:
                    text += " "
                starts.append(len(text))
                text += tok
                ends.append(len(text))
                prev = tok
            spans = tuple(
                (
                    starts[a],
                    ends[b - 1],
                    "IGNORE" if row["tokens"][a][:1] == "@" else "NAME",
                    "person",
                )
                for a, b in row["person"]
            )
            yield Example(text, spans)


def fresh_sets() -> dict[str, Path]:
    """Name -> file of the committed fresh held-out sets."""
    return {p.name.removesuffix(".jsonl.gz"): p for p in sorted(FRESH.glob("*.jsonl.gz"))}
