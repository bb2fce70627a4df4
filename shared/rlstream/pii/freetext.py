"""PII that only prose reveals: person names, street addresses, postcodes, written dates of
birth and passport numbers.

No NER model can be loaded offline (presidio's person recogniser needs a spaCy model from a
hub), so names come from the U.S. Census 1990 first-name lists shipped in the ``names``
package plus the words around them: a known first name followed by a capitalised surname
("Maria Gonzalez", "John O'Connor"), or any capitalised name after a cue that introduces
one ("my name is", "this is", "Thanks, Kenji", "Mr."), or a capitalised word before a census
surname outside a longer capitalised run. Addresses are a house number, up
to four words and a street type ("221B Baker Street", "1600 Pennsylvania Avenue NW"), with an
optional unit, city, state and ZIP; UK postcodes are matched on their own. Dates of birth
and passport numbers need a cue word before them ("born on March 3, 1990", "passport
number X1234567"), which keeps order dates and order numbers out.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

import names as census_names

#: capitalised words that start sentences or name things but are not people
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "up",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "yes",
        "you",
        "your",
        "hi",
        "hello",
        "hey",
        "dear",
        "thanks",
        "thank",
        "regards",
        "cheers",
        "best",
        "sincerely",
        "please",
        "sorry",
        "ok",
        "okay",
        "good",
        "great",
        "morning",
        "afternoon",
        "evening",
        "customer",
        "service",
        "support",
        "team",
        "agent",
        "bot",
        "user",
        "assistant",
        "manager",
        "account",
        "order",
        "card",
        "credit",
        "debit",
        "bank",
        "payment",
        "refund",
        "invoice",
        "delivery",
        "package",
        "parcel",
        "street",
        "road",
        "avenue",
        "lane",
        "drive",
        "boulevard",
        "court",
        "place",
        "way",
        "suite",
        "apt",
        "apartment",
        "unit",
        "floor",
        "north",
        "south",
        "east",
        "west",
        "new",
        "old",
        "saint",
        "st",
        "mount",
        "city",
        "county",
        "state",
        "park",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "today",
        "tomorrow",
        "yesterday",
        "mr",
        "mrs",
        "ms",
        "miss",
        "dr",
        "sir",
        "madam",
        "mister",
    ]
)

_UP = "A-ZÀ-ÖØ-Þ"
_LOW = "a-zß-öø-ÿ"
#: one capitalised name word: Maria, O'Connor, McDonald, Jean-Luc, Núñez
_NAME = rf"(?:[{_UP}]['’])?[{_UP}][{_LOW}]+(?:[-'’][{_UP}]?[{_LOW}]+)*"
_PARTICLE = r"(?:van|von|der|den|de|da|di|du|del|della|le|la|bin|ibn|al|ten|ter|dos|das)"
_SUFFIX_WORDS = (
    r"Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct|Place|Pl|Way|"
    r"Terrace|Close|Crescent|Square|Parkway|Highway|Circle|Trail|Row|Mews|Gardens|Grove|Hill|"
    r"Walk|Alley|Loop|Pike|Plaza|Green|Rise|View|Crossing|Parade|Creek|Esplanade|Circuit|Quay"
)
_PAIR = re.compile(
    rf"(?=[{_UP}])(?<![\w'’-])({_NAME})(?:[ \t]+[{_UP}]\.)?((?:[ \t]+{_PARTICLE})*)[ \t]+({_NAME})(?![\w'’-])"
    rf"(?!\s+(?:{_SUFFIX_WORDS})\b)"
)
#: a cue that introduces a name; group 1 = the name (one or two words)
#: a phrase that introduces a name, matched on the lower-cased 40 characters before each
#: capitalised word (one case-insensitive scan of the whole text cost ~1.5 ms per 3 KB)
_CUE_BEFORE = re.compile(
    r"\b(?:my name is|my name's|name is|name's|call me|this is|it's|it is|i am|i'm|"
    r"speak to|speak with|talk to|ask for|spoke to|spoke with|signed|called|named|"
    r"thanks|thank you|regards|cheers|sincerely|best|hi|hello|hey|dear|"
    r"mr|mrs|ms|miss|dr|prof|mx)\.?[,:]?\s+(?:(?:mr|mrs|ms|miss|dr|prof|mx)\.?\s+)?$"
)
_WORD = re.compile(rf"(?=[{_UP}])(?<![\w'’-]){_NAME}(?![\w'’-])")
_NAME_AFTER_CUE = re.compile(rf"({_NAME}(?:(?:[ \t]+{_PARTICLE})*[ \t]+{_NAME})?)(?![\w'’-])")
#: cues after which any capitalised word is a name (else it must be a known first name)
_STRONG = re.compile(
    r"(?i)(?:my name is|my name's|name is|name's|call me|signed|regards|cheers|sincerely|"
    r"thanks,|thank you,|best,|dear|mr\.?|mrs\.?|ms\.?|miss|dr\.?|prof\.?|mx\.?)[,:]?\s+"
    r"(?:(?:mr|mrs|ms|miss|dr|prof|mx)\.?\s+)?$"
)

_SUFFIX = (
    r"Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct|Place|Pl|Way|"
    r"Terrace|Ter|Close|Crescent|Cres|Square|Sq|Parkway|Pkwy|Highway|Hwy|Circle|Cir|Trail|"
    r"Trl|Row|Mews|Gardens|Grove|Hill|Walk|Alley|Loop|Pike|Plaza|Green|Rise|View|Crossing"
)
_UK_POSTCODE = r"(?:GIR ?0AA|[A-Z]{1,2}\d[A-Z\d]? ?\d[ABD-HJLNP-UW-Z]{2})"
_CA_POSTCODE = r"(?:[ABCEGHJ-NPRSTVXY]\d[ABCEGHJ-NPRSTV-Z] ?\d[ABCEGHJ-NPRSTV-Z]\d)"
_ADDRESS = re.compile(
    rf"(?<![\w-])\d{{1,5}}[A-Za-z]?(?:-\d{{1,5}})?\s+"
    rf"(?:(?:[NSEW]\.?|North|South|East|West)\s+)?"
    rf"(?:[{_UP}0-9][\w'’.-]*\s+){{0,4}}?(?:{_SUFFIX})\b\.?"
    r"(?:\s+(?:NW|NE|SW|SE|N|S|E|W)\b)?"
    r"(?:,?\s+(?:Apt|Apartment|Suite|Ste|Unit|Flat|#)\.?\s*[\w-]+)?"
    rf"(?:,\s*[{_UP}][\w'’-]+(?:\s+[{_UP}][\w'’-]+){{0,2}}"
    rf"(?:,?\s+[A-Z]{{2,3}}\b)?(?:,?\s+(?:\d{{4,5}}(?:-\d{{4}})?|{_UK_POSTCODE}|{_CA_POSTCODE}))?)?"
)
#: UK and Canadian postcodes are specific enough alone (a UK one covers ~15 households); a
#: bare 4-5 digit ZIP is not (rlstream's hard negatives keep "zip 59179" unredacted)
_POSTCODE = re.compile(rf"(?<![\w-])(?:{_UK_POSTCODE}|{_CA_POSTCODE})(?![\w-])")

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_WRITTEN_DATE = (
    rf"(?:{_MONTH}\s+{_DAY},?\s+(?:19|20)\d\d|{_DAY}\s+(?:of\s+)?{_MONTH},?\s+(?:19|20)\d\d)"
)
_DOB = re.compile(
    r"(?i:\b(?:dob|d\.o\.b\.?|date of birth|birth ?date|birthday|born(?: on| in)?)\b)"
    rf"[^\n]{{0,30}}?({_WRITTEN_DATE})"
)
_PASSPORT = re.compile(
    r"(?i:\bpassport\b(?:\s+(?:number|no\.?|num\.?|#|id))?)[^\n\w]{0,4}(?:(?i:is)\s+)?"
    r"((?=[A-Z0-9]*\d)[A-Z0-9]{6,9})\b"
)


@lru_cache(maxsize=1)
def first_names() -> frozenset[str]:
    """U.S. Census 1990 first names (male and female), lower-cased."""
    folder = os.path.dirname(census_names.__file__)
    out: set[str] = set()
    for name in ("dist.male.first", "dist.female.first"):
        with open(os.path.join(folder, name), encoding="ascii") as fh:
            out.update(line.split()[0].lower() for line in fh if line.strip())
    return frozenset(out - _STOP)


@lru_cache(maxsize=1)
def surnames() -> frozenset[str]:
    """U.S. Census 1990 surnames (88,799, many of them not English), lower-cased."""
    folder = os.path.dirname(census_names.__file__)
    with open(os.path.join(folder, "dist.all.last"), encoding="ascii") as fh:
        out = {line.split()[0].lower() for line in fh if line.strip()}
    return frozenset(out - _STOP)


_CAPITAL_BEFORE = re.compile(r"[A-Z][\w'’.&-]*[ \t]+$")
_CAPITAL_AFTER = re.compile(r"[ \t]+(?:&[ \t]+)?[A-Z]")


def _is_name(word: str) -> bool:
    return word.lower() not in _STOP


def names(text: str) -> list[tuple[int, int]]:
    """Spans of person names in prose."""
    out: list[tuple[int, int]] = []
    known = first_names()
    for w in _WORD.finditer(text):
        window = text[max(0, w.start() - 40) : w.start()].lower()
        if _CUE_BEFORE.search(window) is None:
            continue
        m = _NAME_AFTER_CUE.match(text, w.start())
        if m is None:
            continue
        words = m.group(1).split()
        if not _is_name(words[0]):
            continue
        strong = _STRONG.search(window) is not None
        if not strong and words[0].lower() not in known:
            continue
        end = m.end(1) if _is_name(words[-1]) else m.start(1) + len(words[0])
        out.append((m.start(1), end))
    family = surnames()
    for m in _PAIR.finditer(text):
        first, last = m.group(1), m.group(3)
        if not (_is_name(first) and _is_name(last)):
            continue
        # a known first name, or a capitalised word before a known surname when the pair is
        # not part of a longer capitalised run (organisations: "Red Robin Stores")
        if first.lower() in known or (
            last.lower().replace("’", "'") in family
            and _CAPITAL_BEFORE.search(text, max(0, m.start(1) - 64), m.start(1)) is None
            and _CAPITAL_AFTER.match(text, m.end(3)) is None
        ):
            out.append((m.start(1), m.end(3)))
    return out


def addresses(text: str) -> list[tuple[int, int]]:
    """Street addresses (with unit, city, state, ZIP when present), UK / Canadian postcodes.
    A bare PO box or ZIP alone identifies nobody and stays (rlstream's hard negatives)."""
    out = [m.span() for m in _ADDRESS.finditer(text)]
    out += [m.span() for m in _POSTCODE.finditer(text)]
    return out


def dates_of_birth(text: str) -> list[tuple[int, int]]:
    return [m.span(1) for m in _DOB.finditer(text)]


def passports(text: str) -> list[tuple[int, int]]:
    return [m.span(1) for m in _PASSPORT.finditer(text)]


_HAS_NAME_SHAPE = re.compile(rf"[{_UP}][{_LOW}]")


def find(text: str, low: str, digits: int) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every free-text finding; ``low`` / ``digits`` are what the
    caller already computed, so texts without the needed cue skip each regex."""
    out: list[tuple[int, int, str]] = []
    if _HAS_NAME_SHAPE.search(text) is not None:
        out += [(a, b, "NAME") for a, b in names(text)]
    if digits:
        out += [(a, b, "ADDRESS") for a, b in addresses(text)]
        if "birth" in low or "born" in low or "dob" in low or "d.o.b" in low:
            out += [(a, b, "DOB") for a, b in dates_of_birth(text)]
        if "passport" in low:
            out += [(a, b, "PASSPORT") for a, b in passports(text)]
    return out
