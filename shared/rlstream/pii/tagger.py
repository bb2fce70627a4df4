"""Person names in prose by a small trained sequence tagger (a linear-chain CRF,
``python-crfsuite``), on top of the word-list rules of :mod:`rlstream.pii.people`.

The rules see a capitalised run and its cue words; they miss names that no list holds
("Davorin", "Käyhkö") and names that are also words ("Jack", "Viola") when no cue is next to
them. The tagger scores every token of a sentence from its word, affixes, shape and Brown
cluster, its membership in the census, world-name, dictionary and place lists, whether the
rules took it, and the words, shapes and clusters two either side. Names are the runs of
tokens it tags ``N``.

Model: ``data/names.crfsuite``, trained on the ``tune`` split of the public PII set,
rlstream's hard negatives and four corpora annotated by others (``tools/data/ner``), by
``tools/train_pii_names.py`` (deterministic; the ``heldout`` split and the sets of
``bench/data`` are never seen). It is loaded on first use.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import pycrfsuite

from rlstream.pii import people
from rlstream.pii.lexicon import (
    brown_clusters,
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


_DIGITS = re.compile(r"[0-9]+")


@lru_cache(maxsize=65536)
def _word(w: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A token's own features, and the subset its neighbours see (no word, no affixes).
    Cached by value: a stream's words repeat, and the list lookups are most of the cost."""
    near: list[str] = []
    _word_feats(w, "", near)
    low = w.lower()
    if not w.isascii():
        near.append("nonascii")
    own = [*near] if f"w={low}" in near else [*near, f"w={low}"]
    if len(low) > 3:
        own += [f"suf3={low[-3:]}", f"pre3={low[:3]}"]
    near = [x for x in near if not x.startswith("w=")]
    bits = brown_clusters().get(_DIGITS.sub("0", low))
    cluster = [f"bc{n}={bits[:n]}" for n in (4, 6, 10)] if bits else ["bc=none"]
    own += [*cluster, f"bc={bits}"] if bits else cluster
    near += cluster
    return tuple(own), tuple(near)


def features(toks: list[tuple[int, int, str]], ruled: set[int]) -> list[list[str]]:
    """One feature list per token: its shape, lower-cased word, affixes, list memberships
    and the rules' verdict (``ruled`` holds the indices the rules call a name); the shape
    and lists of the next and previous token; the words and shapes two either side, and
    the two words before and after as pairs ("shouted at", "began writing")."""
    cached = [_word(w) for _, _, w in toks]
    low = [w.lower() for _, _, w in toks]
    shapes = [_shape(w) for _, _, w in toks]
    n = len(toks)
    out: list[list[str]] = []
    for i in range(n):
        f = ["bias", *cached[i][0]]
        if i in ruled:
            f.append("rule")
        if i == 0:
            f.append("BOS")
        if i == n - 1:
            f.append("EOS")
        for d in (-1, 1):
            if 0 <= i + d < n:
                f += [f"{d}:{x}" for x in cached[i + d][1]]
                if i + d in ruled:
                    f.append(f"{d}:rule")
        for d in (-2, -1, 1, 2):
            if 0 <= i + d < n:
                f += [f"{d}:s={shapes[i + d]}", f"{d}:w={low[i + d]}"]
        if i >= 2:
            f.append(f"-2-1:{low[i - 2]} {low[i - 1]}")
        if i + 2 < n:
            f.append(f"+1+2:{low[i + 1]} {low[i + 2]}")
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
    if " ".join(low) in places() or any(w in people.ORG_LAST for w in low):
        return False  # "Buenos Aires", "Eberhard Faber GmbH"
    if any(len(w) < 3 or (w in proper_nouns() and w not in first_names()) for w in low):
        return False  # a dictionary proper noun, not a first name: "English", "Europe"
    if len(low) == 1 and people.IN_PLACE.search(text[max(0, a - 20) : a].lower()):
        return False  # "in Bicholim"
    if not any(people.listed(w) for w in low):
        return False
    shop = text[b : b + 2] in ("'s", "’s") and text[b + 2 : b + 4].istitle()
    return not (len(words) == 1 and (shop or people.shop(text, b)))


_SENTENCE_END = frozenset('.!?:;|"“”()[]>*-')


def _candidate(toks: list[tuple[int, int, str]], i: int) -> bool:
    w = toks[i][2]
    if people.NAME_WORD.fullmatch(w) is None or (low := w.lower()) in people.STOP:
        return False  # "IP", "ORD-85196", "I've", "Hello"
    return low not in common_words() or (i > 0 and toks[i - 1][2] not in _SENTENCE_END)


_ABBREVIATIONS = frozenset(["mr", "mrs", "ms", "dr", "prof", "st", "mt", "jr", "sr", "no", "vs"])


def sentences(text: str, toks: list[tuple[int, int, str]]) -> list[range]:
    """Token ranges of the sentences and lines of ``text``: the tagger was trained on
    sentences, and tagging only the sentences that hold a candidate keeps long messages
    cheap. A full stop after a title or an initial ("Dr.", "J.") ends nothing."""
    out: list[range] = []
    start = 0
    for i in range(1, len(toks)):
        prev = toks[i - 1][2]
        end = prev in ("!", "?") or (
            prev == "."
            and i >= 2
            and len(toks[i - 2][2]) > 1
            and toks[i - 2][2].lower() not in _ABBREVIATIONS
        )
        if end or "\n" in text[toks[i - 1][1] : toks[i][0]]:
            out.append(range(start, i))
            start = i
    if toks:
        out.append(range(start, len(toks)))
    return out


def _tagged(text: str, ruled: list[tuple[int, int]]) -> list[tuple[int, int, float]]:
    """(start, end, lowest marginal of N) of the runs the tagger tags, over the sentences
    that hold a capitalised word outside the rules' spans that could start a name: no
    greeting, title or function word, and no ordinary word opening a sentence
    ("Unfortunately", "Sure"). Most short replies have none (cost)."""
    toks = tokens(text)
    marked = {i for i, (a, b, _) in enumerate(toks) if any(s <= a and b <= e for s, e in ruled)}
    out: list[tuple[int, int, float]] = []
    for sent in sentences(text, toks):
        if not any(_candidate(toks, i) for i in sent if i not in marked):
            continue
        part = toks[sent.start : sent.stop]
        tg = _tagger()
        tg.set(features(part, {i - sent.start for i in marked if i in sent}))
        prev_end = -1
        for j, (a, b, w) in enumerate(part):
            p = tg.marginal("N", j)
            if not w[0].isalpha() or p < THRESHOLD:
                continue
            if out and out[-1][1] == prev_end and text[prev_end:a] in ("", " ", "\t", ". ", "-"):
                out[-1] = (out[-1][0], b, min(p, out[-1][2]))
            else:
                out.append((a, b, p))
            prev_end = b
    return out


#: a span the word lists do not back is still kept at this probability or above, when it
#: is no greeting, title, function word or place (``_plausible``)
CONFIDENT = 0.7


#: the last character before a sentence ("" at the start of the text)
_OPENS = frozenset(["", ".", "!", "?", ":", ";", "|", '"', "“", ">", "*", "-", "("])


def _plausible(text: str, a: int, b: int) -> bool:
    words = text[a:b].replace(".", " ").split()
    if not words or not all(w[0].isupper() for w in words):
        return False
    low = [w.lower() for w in words]
    if any(w in people.STOP or w in places() or w in people.ORG_LAST for w in low):
        return False  # "Ernst Home Centers", "Thom McAn Store"
    if people.demonym(low[0]):
        return False  # "Kenyan Border Force"
    if len(words) == 1 and people.shop(text, b):
        return False  # "Coffey's Market", "Henry's |"
    if all(w in common_words() for w in low) and text[:a].rstrip()[-1:] in _OPENS:
        return False  # "Frank feedback: ...": an ordinary word opening a sentence
    return " ".join(low) not in places()


def names(text: str, ruled: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The rules' spans ``ruled`` plus the tagger's spans that overlap none of them and
    that the word lists back (:func:`_backed`), or that the tagger is sure of
    (:data:`CONFIDENT`) and that are no place (:func:`_plausible`)."""
    out = list(ruled)
    for a, b, p in _tagged(text, ruled):
        if any(a < e and s < b for s, e in ruled):
            continue
        if people.AT_WORK.search(text[max(0, a - 40) : a].lower()):
            continue  # an employer: "I work for Huffman and Boyle"
        if _backed(text, a, b) or (p >= CONFIDENT and _plausible(text, a, b)):
            out.append((a, b))
    return out
