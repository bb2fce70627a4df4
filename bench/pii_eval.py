"""Recall and precision of rlstream's PII detectors on a seeded, labelled synthetic set.

    .venv/bin/python bench/pii_eval.py [--per-kind 3000] [--negatives 5000] [--seed 0]
        [--public 2000 --split both|tune|heldout|all] [--show-errors 30] [--corpus F.jsonl.gz]
        [--references 1319] [--ner DIR]

``--references N``: grading references kept gradeable after redaction, on N maths and N
support tasks of 4 rollouts each (``bench/pii_references.py``). ``--ner DIR``: the
free-text sets again with a local NER model (``rlstream.pii.ner``) in union with the
built-ins, after the rows without it.

A detection counts only when its span and type exactly match a labelled span; a wrong type
is both a miss and a false positive. Hard negatives (order ids, prices, dates, versions,
tracking numbers, hashes, bad-checksum cards / IBANs) are included in every run.
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from pathlib import Path

import pii_corpora
import pii_public
import pii_references
import pii_wikigold
from rlstream.pii import ner
from rlstream.pii.detectors import KINDS, find_spans
from rlstream.sampledata import generate_transcripts
from rlstream_testkit.pii_synth import Example, generate, generate_heldout

FREE_KINDS = ("NAME", "ADDRESS", "DOB", "PASSPORT")
_TITLE = re.compile(r"(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Sir)\.?\s+")


def evaluate(examples: list[Example]) -> dict[str, dict[str, float]]:
    tp: Counter[str] = Counter()
    gold_n: Counter[str] = Counter()
    pred_n: Counter[str] = Counter()
    for ex in examples:
        gold = set(ex.spans)
        pred = {(s.start, s.end, s.kind) for s in find_spans(ex.text)}
        for _, _, kind in gold:
            gold_n[kind] += 1
        for p in pred:
            pred_n[p[2]] += 1
            if p in gold:
                tp[p[2]] += 1
    out: dict[str, dict[str, float]] = {}
    for kind in (*KINDS, "ALL"):
        t = sum(tp.values()) if kind == "ALL" else tp[kind]
        g = sum(gold_n.values()) if kind == "ALL" else gold_n[kind]
        p = sum(pred_n.values()) if kind == "ALL" else pred_n[kind]
        out[kind] = {
            "recall": t / g if g else 1.0,
            "precision": t / p if p else 1.0,
            "gold": g,
            "predicted": p,
        }
    return out


def evaluate_public(
    examples: list[pii_public.Example], show: int = 0
) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Per label (person, first_name, last_name, address, street_address, postcode, DOB) and
    per kind. Span rules: a gold span is *found* when every letter and digit of it lies in
    predicted spans of the same kind (redacted, nothing left to read; a prediction that
    also takes "Mr." or the "'s" after a name still finds it). Punctuation and a leading
    title are not identifying: "Biever, Jason" redacted as "<NAME_1>, <NAME_2>" and "Dr.
    <NAME_1>" for gold "Dr. Gary Ross" are found (before session 8 every non-space
    character counted: held-out NAME recall 0.8798 then, see bench/README.md). A predicted free-text span is
    *correct* when it overlaps a gold span of its kind; one over an unlabelled company, city
    or product counts against precision. IGNORE spans (see pii_public) count neither way.
    ``show`` misses and false positives are returned, each tagged with its label."""
    found: Counter[str] = Counter()
    gold_n: Counter[str] = Counter()
    tp: Counter[str] = Counter()
    pred_n: Counter[str] = Counter()
    errors: list[str] = []
    shown: Counter[str] = Counter()

    def note(tag: str, line: str) -> None:
        if shown[tag] < show:
            shown[tag] += 1
            errors.append(f"{tag:<22} {line}")

    for ex in examples:
        pred = [s for s in find_spans(ex.text) if s.kind in FREE_KINDS]
        for a, b, kind, label in ex.spans:
            if kind == "IGNORE":
                continue
            covered = {i for s in pred if s.kind == kind for i in range(s.start, s.end)}
            title = _TITLE.match(ex.text, a, b) if kind == "NAME" else None
            start = title.end() if title else a
            ok = all(i in covered for i in range(start, b) if ex.text[i].isalnum())
            for key in (label, kind):
                gold_n[key] += 1
                found[key] += ok
            if not ok:
                note(f"MISS {label}", f"{ex.text[a:b]!r} in {_around(ex.text, a, b)!r}")
        for s in pred:
            if any(k == "IGNORE" and a < s.end and s.start < b for a, b, k, _ in ex.spans):
                continue
            hit = any(k == s.kind and a < s.end and s.start < b for a, b, k, _ in ex.spans)
            pred_n[s.kind] += 1
            tp[s.kind] += hit
            if not hit:
                text = ex.text[s.start : s.end]
                note(f"FP {s.kind}", f"{text!r} in {_around(ex.text, s.start, s.end)!r}")
    out: dict[str, dict[str, float]] = {}
    for key in sorted(gold_n, key=lambda k: (k not in FREE_KINDS, k)):
        out[key] = {
            "recall": found[key] / gold_n[key],
            "precision": tp[key] / pred_n[key]
            if key in FREE_KINDS and pred_n[key]
            else float("nan"),
            "gold": gold_n[key],
            "predicted": pred_n[key] if key in FREE_KINDS else 0,
        }
    return out, sorted(errors)


def _around(text: str, a: int, b: int) -> str:
    return text[max(0, a - 40) : b + 25].replace("\n", " | ")


def sample_findings(n: int, seed: int, show: int = 0) -> tuple[int, Counter[str], list[str]]:
    """Free-text kinds predicted in the support and maths conversations of
    ``rlstream.sampledata`` (product names, order ids, tool results, agent replies). The
    generator plants only structured PII (e-mails, phones, cards ...), so each free-text
    finding there is a false positive, except the people of its maths word problems
    ("Natalia sold clips ..."), which are names in prose. Returns (strings, counts, examples)."""
    texts: list[str] = []
    for domain in ("support", "math"):
        ts, _ = generate_transcripts(seed, max(1, n // 8), 8, domain)
        texts += [m.content for t in ts for m in t.messages if isinstance(m.content, str)]
    found: Counter[str] = Counter()
    shown: list[str] = []
    for text in texts:
        for s in find_spans(text):
            if s.kind in FREE_KINDS:
                found[s.kind] += 1
                if len(shown) < show:
                    value = text[s.start : s.end]
                    shown.append(
                        f"sample {s.kind:<8} {value!r} in {_around(text, s.start, s.end)!r}"
                    )
    return len(texts), found, shown


def negatives_false_positives(n: int, seed: int) -> Counter[str]:
    """Free-text kinds predicted on the hard negatives of rlstream's own synthetic set
    (order ids, prices, dates, versions ...): each one is a false positive."""
    fp: Counter[str] = Counter()
    for ex in generate(0, n, seed):
        if not ex.spans:
            for s in find_spans(ex.text):
                if s.kind in FREE_KINDS:
                    fp[s.kind] += 1
    return fp


def misses(examples: list[Example], limit: int = 20) -> list[str]:
    out = []
    for ex in examples:
        pred = {(s.start, s.end, s.kind) for s in find_spans(ex.text)}
        if pred != set(ex.spans):
            out.append(
                f"{ex.text!r} gold={[(ex.text[a:b], k) for a, b, k in ex.spans]} pred={[(ex.text[a:b], k) for a, b, k in pred]}"
            )
            if len(out) >= limit:
                break
    return out


def _name_only(label: str, examples: list[pii_public.Example], show: int) -> None:
    """Print NAME recall / precision (and ``show`` errors) of a set labelling names only."""
    report, errors = evaluate_public(examples, show)
    m = report["NAME"]
    print(
        f"== {label}: recall {m['recall']:.4f} precision {m['precision']:.4f} "
        f"gold {int(m['gold'])} pred {int(m['predicted'])} in {len(examples)} sentences"
    )
    for line in errors:
        if "NAME" in line or "MISS" in line:
            print(f"ERR {label.split()[0]}", line)


def public_report(args: argparse.Namespace, tag: str = "") -> None:
    """The free-text sets (public split(s), Wikigold, corpora, hard negatives, sample
    messages) with the detectors as configured; ``tag`` marks the lines of a second run."""
    splits = ("tune", "heldout") if args.split == "both" else (args.split,)
    for split in splits:
        public = list(pii_public.generate(args.public, args.seed, split))
        t0 = time.perf_counter()
        report, errors = evaluate_public(public, args.show_errors)
        dt = time.perf_counter() - t0
        print(f"== public set, split {split} (presidio-research templates + people){tag}")
        print(f"{'label':<18} {'recall':>8} {'precision':>10} {'gold':>7} {'pred':>7}")
        for key, m in report.items():
            print(
                f"{key:<18} {m['recall']:>8.4f} {m['precision']:>10.4f} "
                f"{int(m['gold']):>7} {int(m['predicted']):>7}"
            )
        print(f"{len(public)} sentences in {dt:.2f}s")
        for line in errors:
            print("ERR", line)
    _name_only(
        "wikigold (Wikipedia prose, hand-annotated PER; second held-out set, NAME only)" + tag,
        list(pii_wikigold.generate()),
        args.show_errors,
    )
    for name, path in {**pii_corpora.fresh_sets(), **{p.name: p for p in args.corpus}}.items():
        label = f"{name} (annotated by others, never trained on; NAME only){tag}"
        _name_only(label, list(pii_corpora.load(path)), args.show_errors)
    fp = negatives_false_positives(args.negatives, args.seed)
    print(f"free-text false positives on {args.negatives} hard negatives{tag}: {dict(fp) or 0}")
    n_texts, found, shown = sample_findings(args.sample, args.seed, args.show_errors)
    print(
        f"free-text findings in {n_texts} sample support/maths messages (no free-text PII "
        f"planted; maths word problems name people){tag}: {dict(found) or 0}"
    )
    for line in shown:
        print("ERR", line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--per-kind", type=int, default=3000)
    ap.add_argument("--negatives", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show-errors", type=int, default=0)
    ap.add_argument("--public", type=int, default=2000, help="sentences per public split")
    ap.add_argument(
        "--split",
        choices=("tune", "heldout", "all", "both"),
        default="both",
        help="public split(s): tune to look at while changing detectors, heldout to report",
    )
    ap.add_argument(
        "--corpus",
        type=Path,
        action="append",
        default=[],
        help="also score this {tokens, person} JSONL file (.gz or plain), e.g. CoNLL-2003 test",
    )
    ap.add_argument("--sample", type=int, default=400, help="sample conversations per domain")
    ap.add_argument(
        "--ner",
        help="also report the free-text sets with this local NER model (a transformers "
        "token-classification directory or a spaCy pipeline) in union with the built-ins",
    )
    ap.add_argument(
        "--references",
        type=int,
        default=1319,
        help="maths / support tasks (4 rollouts each) for the gradeable-references line; 0: skip",
    )
    args = ap.parse_args()
    if args.references:
        t0 = time.perf_counter()
        for line in pii_references.report(args.references, args.seed, args.show_errors):
            print(line)
        print(f"references measured in {time.perf_counter() - t0:.1f}s")
    if args.public:
        public_report(args)
        if args.ner:
            model = ner.check(args.ner)
            ner.configure(model)
            t0 = time.perf_counter()
            public_report(args, f" + NER ({model.kind}: {Path(model.source).name})")
            print(f"with NER in {time.perf_counter() - t0:.1f}s")
            ner.configure(None)
    sets = {
        "main (templates the detectors were developed against)": list(
            generate(args.per_kind, args.negatives, args.seed)
        ),
        "second set (formats written after tuning; first run R=0.928 P=0.999, misses then fixed)": list(
            generate_heldout(args.per_kind * 3, args.negatives, args.seed + 1)
        ),
    }
    for title, examples in sets.items():
        t0 = time.perf_counter()
        report = evaluate(examples)
        dt = time.perf_counter() - t0
        print(f"== {title}")
        print(f"{'type':<8} {'recall':>8} {'precision':>10} {'gold':>7} {'pred':>7}")
        for kind, m in report.items():
            r, p = m["recall"], m["precision"]
            print(f"{kind:<8} {r:>8.4f} {p:>10.4f} {int(m['gold']):>7} {int(m['predicted']):>7}")
        chars = sum(len(e.text) for e in examples)
        print(f"{len(examples)} sentences, {chars / 1e6:.2f} MB in {dt:.2f}s")
        for line in misses(examples, args.show_errors):
            print("ERR", line)


if __name__ == "__main__":
    main()
