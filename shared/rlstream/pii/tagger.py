"""Person names in prose by a small trained sequence tagger (a linear-chain CRF,
``python-crfsuite``), on top of the word-list rules of :mod:`rlstream.pii.people`.

The rules see a capitalised run and its cue words; they miss names that no list holds
("Davorin", "Käyhkö") and names that are also words ("Jack", "Viola") when no cue is next to
them. The tagger scores every token from its shape, its neighbours (lower-cased when they
are ordinary words, else their shape), its membership in the census, world-name, dictionary
and place lists, and whether the rules took it. Names are the runs of tokens it tags ``N``.

Model: ``data/names.crfsuite``, trained on the ``tune`` split of the public PII set and on
rlstream's hard negatives only, by ``tools/train_pii_names.py`` (deterministic; the
``heldout`` split is never seen). It is loaded on first use.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import pycrfsuite

from rlstream.pii import people
from rlstream.pii.lexicon import (
    common_words,
    countries,
    first_names,
    frequent_surnames,
    places,
    proper_nouns,
    surnames,
    world_first_names,
    world_surnames,
)

MODEL = Path(__file__).resolve().parent / "data" / "names.crfsuite"
#: a word (with inner apostrophes / hyphens: O'Connor, Jean-Luc) or one punctuation mark
_TOKEN = re.compile(r"\w+(?:['’](?![sS]\b)\w+|-\w+)*|['’][sS]\b|[^\w\s]")
_CUE_WORDS = frozenset(
    [
        "i'm",
        "im",
        "am",
        "is",
        "name",
        "name's",
        "called",
        "named",
        "this",
        "it's",
        "dear",
        "thanks",
        "thank",
        "hi",
        "hello",
        "hey",
        "mr",
        "mrs",
        "ms",
        "miss",
        "dr",
        "prof",
        "sir",
        "by",
        "with",
        "to",
        "from",
        "and",
        "of",
        "regards",
        "cheers",
        "sincerely",
        "best",
        "signed",
        "me",
        "my",
        "his",
        "her",
        "he",
        "she",
        "producer",
        "director",
        "author",
    ]
)


def tokens(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]


def _shape(w: str) -> str:
    if w[0].isupper():
        if len(w) > 1 and w.isupper():
            return "XX"
        return "Xx" if w[1:].islower() or len(w) == 1 else "XxX"
    if w[0].isdigit():
        return "d"
    if w[0].isalpha():
        return "x"
    return w  # punctuation: itself


#: word-list membership features: (feature tag, the list), in the order the model was trained
_LISTS: tuple[tuple[str, Callable[[], frozenset[str]]], ...] = (
    ("first", first_names),
    ("sur", surnames),
    ("fsur", frequent_surnames),
    ("wfirst", world_first_names),
    ("wsur", world_surnames),
    ("common", common_words),
    ("proper", proper_nouns),
    ("place", places),
    ("country", countries),
)


def _word_feats(w: str, prefix: str, out: list[str]) -> None:
    low = w.lower()
    shape = _shape(w)
    out.append(f"{prefix}s={shape}")
    if low in _CUE_WORDS or not w[0].isalnum():
        out.append(f"{prefix}w={low}")
    if not w[0].isalpha():
        return
    out.extend(f"{prefix}{tag}" for tag, words in _LISTS if low in words())


def features(toks: list[tuple[int, int, str]], ruled: set[int]) -> list[list[str]]:
    """One feature list per token; ``ruled`` holds the indices the rules call a name."""
    own: list[list[str]] = []
    for i, (_, _, w) in enumerate(toks):
        f: list[str] = []
        _word_feats(w, "", f)
        if not w.isascii():
            f.append("nonascii")
        if i in ruled:
            f.append("rule")
        own.append(f)
    out: list[list[str]] = []
    n = len(toks)
    for i in range(n):
        f = ["bias", *own[i]]
        if i == 0:
            f.append("BOS")
        if i == n - 1:
            f.append("EOS")
        for d in (-2, -1, 1, 2):
            j = i + d
            if 0 <= j < n:
                f += [f"{d}:{x}" for x in own[j]]
        out.append(f)
    return out


@lru_cache(maxsize=1)
def _tagger() -> pycrfsuite.Tagger:
    tagger = pycrfsuite.Tagger()
    tagger.open(str(MODEL))
    return tagger


#: a token joins a name when the tagger's marginal probability of ``N`` is at least this
THRESHOLD = 0.25


def _backed(text: str, a: int, b: int) -> bool:
    """A span the rules did not take is kept only when the word lists back it: no word a
    greeting or title, an ordinary English word, a place, a firm suffix or a dictionary
    proper noun that is no first name; one word alone not after "in"; at least one word a
    first name or surname of the census or world lists; and not a shop ("Heslop's Shoes",
    "Heslop's is"). The tagger alone,
    trained on one project's templates, also tags firms and towns in unseen phrasing
    (held-out precision 0.87 without this check, 0.92 with it)."""
    words = text[a:b].replace(".", " ").split()
    if not all(w[0].isupper() for w in words):
        return False
    low = [w.lower() for w in words]
    if any(w in people.STOP or w in common_words() or w in places() for w in low):
        return False
    if " ".join(low) in places() or any(w in _ORG_WORDS for w in low):
        return False  # "Buenos Aires", "Eberhard Faber GmbH"
    if any(len(w) < 3 or (w in proper_nouns() and w not in first_names()) for w in low):
        return False  # a dictionary proper noun, not a first name: "English", "Europe"
    if len(low) == 1 and people.IN_PLACE.search(text[max(0, a - 20) : a].lower()):
        return False  # "in Bicholim"
    if not any(_listed(w) for w in low):
        return False
    shop = text[b : b + 2] in ("'s", "’s") and text[b + 2 : b + 4].istitle()
    return not (len(words) == 1 and (shop or people.shop(text, b)))


_ORG_WORDS = frozenset(["gmbh", "inc", "ltd", "llc", "corp", "co", "plc", "ag", "sa", "nv", "bv"])


def _listed(low: str) -> bool:
    return any(
        low in names for names in (first_names(), surnames(), world_first_names(), world_surnames())
    )


def _tagged(text: str, ruled: list[tuple[int, int]]) -> list[tuple[int, int, float]]:
    toks = tokens(text)
    marked = {i for i, (a, b, _) in enumerate(toks) if any(s <= a and b <= e for s, e in ruled)}
    # the tagger runs only when a span could pass _backed: a capitalised listed word that is
    # no ordinary word or place, outside the rules' spans (most messages have none: cost)
    if not any(
        i not in marked
        and w[0].isupper()
        and (low := w.lower()) not in common_words()
        and low not in places()
        and _listed(low)
        for i, (_, _, w) in enumerate(toks)
    ):
        return []
    tg = _tagger()
    tg.set(features(toks, marked))
    out: list[tuple[int, int, float]] = []
    for i, (a, b, w) in enumerate(toks):
        p = tg.marginal("N", i)
        if not w[0].isalpha() or p < THRESHOLD:
            continue
        if out and out[-1][1] <= a and text[out[-1][1] : a] in ("", " ", "\t", ". ", "-"):
            out[-1] = (out[-1][0], b, min(p, out[-1][2]))
        else:
            out.append((a, b, p))
    return out


def names(text: str, ruled: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The rules' spans ``ruled`` plus the tagger's spans that overlap none of them and that
    the word lists back (:func:`_backed`)."""
    out = list(ruled)
    for a, b, _ in _tagged(text, ruled):
        if not any(a < e and s < b for s, e in ruled) and _backed(text, a, b):
            out.append((a, b))
    return out
