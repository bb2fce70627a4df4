"""Train the person-name tagger of :mod:`rlstream.pii.tagger` (``data/names.crfsuite``).

Training data: the ``tune`` split of the public PII set (``bench/pii_public.py``:
presidio-research templates filled with its FakeNameGenerator people; even template lines
and people rows), rlstream's own hard negatives (``rlstream_testkit.pii_synth``, seed
101, not the evaluation's seed 0), and four corpora annotated by others
(``tools/data/ner``, see its README: CrossNER Wikipedia prose, WNUT-17 and Broad Twitter
Corpus social media, Enron e-mail). The ``heldout`` split, Wikigold and the test splits
used by ``bench/pii_eval.py --fresh`` are never read. Deterministic: the same data,
features and L-BFGS settings give the same model file.

    .venv/bin/python tools/train_pii_names.py --n 6000 --negatives 3000
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import pycrfsuite

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import pii_corpora  # noqa: E402
import pii_public  # noqa: E402
from rlstream.pii import people, tagger  # noqa: E402
from rlstream_testkit.pii_synth import generate  # noqa: E402

_RNG = random.Random(0)


def _sequence(
    text: str, gold: list[tuple[int, int]], drop: float
) -> tuple[list[list[str]], list[str]]:
    """Features and labels; the rules' spans are hidden from a ``drop`` share of sentences,
    so the tagger learns what marks a name that the rules miss."""
    toks = tagger.tokens(text)
    ruled = [] if _RNG.random() < drop else people.names(text)
    marked = {i for i, (a, b, _) in enumerate(toks) if any(s <= a and b <= e for s, e in ruled)}
    labels = ["N" if any(s <= a and b <= e for s, e in gold) else "O" for a, b, _ in toks]
    return tagger.features(toks, marked), labels


CORPORA = ROOT / "tools" / "data" / "ner"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=6000, help="tune-split sentences")
    ap.add_argument("--negatives", type=int, default=3000)
    ap.add_argument("--c1", type=float, default=0.5)
    ap.add_argument("--c2", type=float, default=0.05)
    ap.add_argument("--drop", type=float, default=0.0, help="share trained without the rules")
    ap.add_argument("--out", type=Path, default=tagger.MODEL)
    args = ap.parse_args()
    t0 = time.time()
    trainer = pycrfsuite.Trainer(verbose=False)
    for seed in range(3):
        for ex in pii_public.generate(args.n // 3, seed=seed + 11, split="tune"):
            gold = [(a, b) for a, b, kind, _ in ex.spans if kind == "NAME"]
            trainer.append(*_sequence(ex.text, gold, args.drop))
    for neg in generate(0, args.negatives, seed=101):
        if not neg.spans:
            trainer.append(*_sequence(neg.text, [], args.drop))
    for path in sorted(CORPORA.glob("*.jsonl.gz")):
        for ex in pii_corpora.load(path):
            gold = [(a, b) for a, b, kind, _ in ex.spans if kind == "NAME"]
            trainer.append(*_sequence(ex.text, gold, args.drop))
    trainer.set_params(
        {"c1": args.c1, "c2": args.c2, "max_iterations": 150, "feature.possible_transitions": True}
    )
    trainer.train(str(args.out))
    print(f"{args.out.name}: {args.out.stat().st_size / 1e6:.2f} MB in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
