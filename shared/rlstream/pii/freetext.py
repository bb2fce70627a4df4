"""PII that only prose reveals: person names, street addresses, postcodes, written dates of
birth and passport numbers.

Names: :mod:`rlstream.pii.people` (word lists and cues) and :mod:`rlstream.pii.tagger`, plus
the spans of a local NER model when ``RLSTREAM_PII_NER_MODEL`` names one
(:mod:`rlstream.pii.ner`, in union).
Addresses: a house number, up to four words and a street type ("221B Baker Street", "1600
Pennsylvania Avenue NW"), or a street type first ("2921 rue Parc"), or words that a ", City,
ST postcode" tail vouches for; then an optional unit and either the city (state) on the same
line or an address block of unit / city / region lines closed by a postcode. UK and Canadian
postcodes are matched on their own, other ZIPs only after "zip code is" / "postcode:". Dates
of birth and passport numbers need a cue word before them ("born on March 3, 1990",
"passport number X1234567"), which keeps order dates and order numbers out.
"""

from __future__ import annotations

import re

from rlstream.pii import ner, people, tagger

_UP = people.UPPER

_SUFFIX = (
    r"Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct|Place|Pl|Way|"
    r"Terrace|Ter|Close|Crescent|Cres|Square|Sq|Parkway|Pkwy|Highway|Hwy|Circle|Cir|Trail|"
    r"Trl|Row|Mews|Gardens|Grove|Hill|Walk|Alley|Loop|Pike|Plaza|Green|Rise|View|Crossing"
)
_UK_POSTCODE = r"(?:GIR ?0AA|[A-Z]{1,2}\d[A-Z\d]? ?\d[ABD-HJLNP-UW-Z]{2})"
_CA_POSTCODE = r"(?:[ABCEGHJ-NPRSTVXY]\d[ABCEGHJ-NPRSTV-Z] ?\d[ABCEGHJ-NPRSTV-Z]\d)"
#: street types written before the name ("rue Parc", "chemin Hudson", "Avenida Paulista")
_TYPE_FIRST = (
    r"(?:[Rr]ue|[Cc]hemin|[Aa]venue|[Bb]oulevard|[Bb]oul|[Rr]oute|[Aa]ll[ée]e|[Ii]mpasse|"
    r"[Cc]alle|[Aa]venida|[Rr]ua|[Vv]ia|[Vv]iale|[Pp]iazza|[Cc]orso|[Ss]trada|[Pp]aseo)"
)
_STATE = r"[A-Z]{2,3}\b"
_ZIP = rf"(?:\d{{3,5}}(?:-\d{{4}})?|{_UK_POSTCODE}|{_CA_POSTCODE})(?![\w-])"
#: between the parts of an address: a comma, or a new line with an e-mail quote mark
_SEP = r"(?:[ \t]*,[ \t]*\n?|(?:[ \t]*\n[ \t>|?]*){1,3})[ \t]*"
_UNIT = r"(?:Apt|Apartment|Suite|Ste|Unit|Flat|#)\.?[ \t]*[\w-]+"
_PLACE = rf"[{_UP}][\w'’.-]*(?:[ \t]+[\w'’.-]+){{0,4}}"
_ADDRESS = re.compile(
    rf"(?<![\w-])\d{{1,5}}[A-Za-z]?(?:-\d{{1,5}})?[ \t]+(?:"
    # 2921 rue Parc, 4698 rue des Églises Est, 4558 Boulevard Laflèche
    rf"{_TYPE_FIRST}[ \t]+(?:[\w'’.-]+[ \t]+){{0,3}}[{_UP}][\w'’.-]*"
    # 221B Baker Street, 1600 Pennsylvania Avenue NW, 17 St Omers Road
    rf"|(?:(?:[NSEW]\.?|North|South|East|West)[ \t]+)?(?:[{_UP}0-9][\w'’.-]*[ \t]+){{0,4}}"
    rf"(?:{_SUFFIX})\b\.?(?:[ \t]+(?:NW|NE|SW|SE|N|S|E|W)\b)?"
    # 1570 Blanshard, Victoria, BC V8W 2H9 (no street type: the city, state and code vouch)
    rf"|[{_UP}][\w'’.-]*(?:[ \t]+[{_UP}][\w'’.-]*){{0,2}}(?=,[ \t]*{_PLACE},?[ \t]+{_STATE}"
    rf"[ \t]+{_ZIP})"
    r")"
    rf"(?:,?[ \t]+{_UNIT})?"
    # an address block: unit, city / region lines closed by a postcode line ...
    rf"(?:(?:{_SEP}{_UNIT})?(?:{_SEP}{_PLACE}){{0,3}}{_SEP}(?:{_PLACE}[ \t]+)?"
    rf"(?:(?:{_STATE}[ \t,]+)?{_ZIP}|{_STATE}[ \t]+\d\d(?![\w-]))"
    # ... or a city (state) on the same line
    rf"|,[ \t]*[{_UP}][\w'’-]+(?:[ \t]+[{_UP}][\w'’-]+){{0,2}}(?:,?[ \t]+{_STATE})?)?"
)
#: UK and Canadian postcodes are specific enough alone (a UK one covers ~15 households); a
#: bare 4-5 digit number is not, unless the words before it say it is a ZIP / postcode
#: ("my zip code is 30303", "ZIP: 6037"; rlstream's hard negatives keep "zip 59179")
_POSTCODE = re.compile(
    rf"(?<![\w-])(?:{_UK_POSTCODE}|{_CA_POSTCODE})(?![\w-])"
    r"|(?i:\bzip(?:[ \t]*code)?[ \t]*(?:is|:|#)|\bpost(?:al)?[ \t]*code[ \t]*(?:is|:|#)?)"
    r"[ \t]*(\d{3,5}(?:-\d{4})?)(?![\w-])"
)

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


def names(text: str) -> list[tuple[int, int]]:
    """Spans of person names in prose: the word-list rules of :mod:`rlstream.pii.people`,
    plus the names the trained tagger of :mod:`rlstream.pii.tagger` finds and the word lists
    back."""
    return tagger.names(text, people.names(text))


def addresses(text: str) -> list[tuple[int, int]]:
    """Street addresses (with unit, city, state, ZIP when present), UK / Canadian postcodes.
    A bare PO box or ZIP alone identifies nobody and stays (rlstream's hard negatives)."""
    out = [m.span() for m in _ADDRESS.finditer(text)]
    out += [m.span(1) if m.start(1) >= 0 else m.span() for m in _POSTCODE.finditer(text)]
    return out


def dates_of_birth(text: str) -> list[tuple[int, int]]:
    return [m.span(1) for m in _DOB.finditer(text)]


def passports(text: str) -> list[tuple[int, int]]:
    return [m.span(1) for m in _PASSPORT.finditer(text)]


_HAS_NAME_SHAPE = re.compile(rf"[{_UP}][{people.LOWER}]")


def find(text: str, low: str, digits: int) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every free-text finding; ``low`` / ``digits`` are what the
    caller already computed, so texts without the needed cue skip each regex."""
    # all lower case: only a cue can introduce a name ("thanks kenji")
    shaped = _HAS_NAME_SHAPE.search(text) is not None
    found = names(text) if shaped else people.lower_case(text)
    found = ner.union(found, ner.names(text))  # [] unless a local model is configured
    out: list[tuple[int, int, str]] = [(a, b, "NAME") for a, b in found]
    if digits:
        out += [(a, b, "ADDRESS") for a, b in addresses(text)]
        if "birth" in low or "born" in low or "dob" in low or "d.o.b" in low:
            out += [(a, b, "DOB") for a, b in dates_of_birth(text)]
        if "passport" in low:
            out += [(a, b, "PASSPORT") for a, b in passports(text)]
    return out
