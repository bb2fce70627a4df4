"""Person names in prose, without an NER model (none can be loaded offline).

A name is a run of one to three capitalised words (``Maria``, ``O'Connor``, ``Núñez``,
``Črešnjovnjak``; particles and a middle initial allowed) that the word lists of
:mod:`rlstream.pii.lexicon` or the words before it vouch for:

* after a cue that introduces a name ("my name is", "Thanks,", "Dr.", "called", "starring")
  any capitalised run is a name;
* two or three words: a census first name first, or a census surname last, or no word an
  ordinary English word or a known proper noun ("Mirsade Črešnjovnjak" yes, "Planet Pizza",
  "European Union" no);
* one word alone: a census first name that is not also an ordinary word ("Kenji" yes,
  "Frank", "Grace" no), and not a city after "in" / "from" ("from Victoria").

Runs of four or more capitalised words are titles and organisations; a run followed by
"& Sons", "Inc" and the like is an organisation; one ending in a street or place word is a
place ("Dora Creek").
"""

from __future__ import annotations

import re
from itertools import chain

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


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: greetings, titles, function words: never a name alone (also :mod:`rlstream.pii.tagger`)
STOP = _STOP = _words(
    """a an and are as at be but by can could did do does for from had has have he her his how
    i if in is it its me my no not of on or our she so that the their them then there these
    they this to up us was we were what when where which who why will with would yes you your
    hi hello hey dear thanks thank regards cheers best sincerely please sorry ok okay good great
    morning afternoon evening customer service support team agent bot user assistant manager
    account order card credit debit bank payment refund invoice delivery package parcel street
    road avenue lane drive boulevard court place way suite apt apartment unit floor north south
    east west new old saint st mount city county state park january february march april may
    june july august september october november december monday tuesday wednesday thursday
    friday saturday sunday today tomorrow yesterday mr mrs ms miss dr sir madam mister prof
    name address answer question box mon tue tues wed thu thur thurs fri sat sun feb mar apr
    jun jul aug sep sept oct nov dec"""
)
#: first words of place names ("San Antonio", "São Paulo", "Fort Worth")
_PLACE_LEAD = _words("san santa santo são sankt los las el fort port lake mount cape isla ile")
#: last words of places and businesses ("Dora Creek", "Moor End")
_PLACE_TAIL = _words(
    """street st avenue ave road rd lane ln drive dr boulevard blvd court ct place pl way
    terrace close crescent square parkway highway circle trail row mews gardens grove hill
    walk alley loop pike plaza green rise view creek river lake heights park woods wood valley
    beach bay island springs falls harbour harbor city town village county end bridge"""
)


def _letters(upper: bool) -> str:
    ranges = chain(
        range(0xC0, 0x250), range(0x386, 0x3D0), range(0x400, 0x530), range(0x1E00, 0x1F00)
    )
    return "".join(c for c in map(chr, ranges) if (c.isupper() if upper else c.islower()))


#: upper- / lower-case letters of the Latin, Greek and Cyrillic blocks, for character classes
UPPER = "A-Z" + _letters(True)
LOWER = "a-z" + _letters(False)
_UP, _LOW = UPPER, LOWER
#: one capitalised name word: Maria, O'Connor, McDonald, Jean-Luc, Núñez, Þóroddsson
#: (McLean, DeRose: one inner capital); a possessive "'s" ends the word and the run
_WORD = rf"(?:[{_UP}]['’])?[{_UP}][{_LOW}]+(?:[{_UP}][{_LOW}]+)?(?:(?:-|['’](?![sS]\b))[{_UP}]?[{_LOW}]+)*"
_PARTICLE = r"(?:van|von|der|den|de|da|di|du|del|della|le|la|bin|ibn|al|ten|ter|dos|das)"
_RUN = re.compile(
    rf"(?<![\w'’-]){_WORD}(?:(?:[ \t]+{_PARTICLE})*[ \t]+(?:[{_UP}]\.?[ \t]+)?{_WORD})*(?=['’][sS]\b|(?![\w'’-]))"
)
#: one capitalised name word (also :mod:`rlstream.pii.tagger`)
NAME_WORD = _WORDS = re.compile(rf"{_WORD}")
_ORG_AFTER = re.compile(
    r"(?:['’]s)?,?[ \t]+(?:&[ \t]+[A-Z]|and[ \t]+(?:Sons|Son|Co|Company)\b|(?:Inc|Ltd|LLC|Corp|Co|Company|"
    r"Group|GmbH|plc|Stores?|Markets?|Foods)\b)"
)
#: last words of firms ("Eli Moore Inc", "Harland Clarke Corp")
ORG_LAST = _ORG_LAST = _words(
    """inc ltd llc corp co company group gmbh plc ag sa nv bv bros sons brothers store stores
    shop shops market markets center centers centre centres services partners associates
    holdings industries"""
)
#: a phrase that introduces a name, matched on the lower-cased 40 characters before a run
_CUE = re.compile(
    r"(?:\b(?:my name is|my name's|name is|name's|call me|calls me|this is|it's|it is|i am|i'm|"
    r"speak to|speak with|talk to|ask for|spoke to|spoke with|signed|called|named|known as|"
    r"thanks|thank you|regards|cheers|sincerely|best|hi|hello|hey|dear|under|"
    r"directed by|written by|sung by|played by|starring|says|said|assistant to|"
    r"mr|mrs|ms|miss|dr|prof|mx)\.?|\bname[?:]|\bname\?\s*(?:user|answer|customer):)"
    r"[,:]?\s+(?:(?:mr|mrs|ms|miss|dr|prof|mx)\.?\s+)?$"
)
#: cues after which any capitalised run is a name (else the words must vouch for it)
_STRONG = re.compile(
    r"(?:my name is|my name's|name is|name's|call me|calls me|signed|regards|cheers|sincerely|called|"
    r"named|known as|thanks,|thank you,|best,|dear|mr\.?|mrs\.?|ms\.?|miss|dr\.?|prof\.?|"
    r"mx\.?|name[?:]|name\?\s*(?:user|answer|customer):|directed by|starring|sung by|"
    r"written by|played by)[,:]?\s+(?:(?:mr|mrs|ms|miss|dr|prof|mx)\.?\s+)?$"
)
_PLACE_BEFORE = re.compile(
    r"\b(?:in|from|to|at|near|of|visit|visiting|across|then|via|towards?|into|outside|around|"
    r"between|leaving)[ \t]+$"
)
#: words before a run that make it a place whatever its words ("lives in Oued Esseder")
IN_PLACE = _IN_PLACE = re.compile(
    r"\b(?:in|lives in|live in|moved here from|flew to|arrived at|located in|based in|"
    r"street in|is on|are on)[ \t]+$"
)
#: words before a run that make it an employer ("I work for Magik Lamp", "a year at Rickel")
AT_WORK = _AT_WORK = re.compile(
    r"\b(?:work for|works for|worked for|work at|works at|worked at|year at|employed by|"
    r"employed at|ceo of|founder of|joined)[ \t]+(?:[\w'’-]+[ \t]+(?:and|&)[ \t]+)?$"
)
#: after a run: a street ("Verdandi Gränd street"), or a shop ("Susie's Casuals", "at McDade's.")
_STREET_AFTER = re.compile(r"[ \t]+(?:street|road|avenue|square|lane)\b")
_SHOP_AFTER = re.compile(r"['’]s(?:[ \t]+([A-Z][a-z]+)|[ \t]*(?:[|.,;:!?)\n]|$))")


def demonym(low: str) -> bool:
    """A people's adjective made from a place in the lists ("kenyan", "italian", "japanese",
    "mexican"), unless it is a census first name ("adrian": Adria is a town)."""
    if low in first_names():
        return False
    stems: tuple[str, ...] = ()
    if low.endswith("ese"):
        stems = (low[:-3], low[:-3] + "a")
    elif low.endswith("ian"):
        stems = (low[:-1], low[:-3] + "y", low[:-3] + "a", low[:-3] + "ia")
    elif low.endswith("an"):
        stems = (low[:-1], low[:-2] + "o", low[:-2] + "a")
    elif low.endswith("n"):
        stems = (low[:-1],)
    return any(s in countries() or s in places() for s in stems)


def _vouched(words: list[str], low: list[str]) -> bool:
    """Two or three words that together read as a person's name."""
    first, common, proper = first_names(), common_words(), proper_nouns()
    if low[0] in first:
        # "Grace Kelly", "Jack Lewis" yes, "Princess Royal" (two ordinary words) no
        return (
            low[0] not in common
            or _unknown(low[-1], common, proper, first)
            or low[-1] in frequent_surnames()
        )
    if (low[0] in proper and _DEMONYM.search(low[0])) or demonym(low[0]):
        return False  # "French Border Force", "European Union", "Kenyan Border Force"
    if low[-1].replace("’", "'") in surnames() and (
        _unknown(low[0], common, proper, first) or _unknown(low[-1], common, proper, first)
    ):
        return True  # "Trine Johansen" yes, "Food Fair", "Planet Pizza" no
    if not all(_LATIN.fullmatch(w) for w in words):
        return False  # Greek / Cyrillic runs here were places, not people
    return all(_unknown(w, common, proper, first) for w in low)


def _unknown(w: str, common: frozenset[str], proper: frozenset[str], first: frozenset[str]) -> bool:
    """Neither an ordinary word nor a people's or a place's adjective ("European")."""
    if w in common or (w[-1:] == "s" and w[:-1] in common):  # the list has no plurals
        return False
    return not (w in proper and w not in first and _DEMONYM.search(w))


DEMONYM = _DEMONYM = re.compile(r"(?:an|ese|ish|ic|ch)$")


_LATIN = re.compile(r"[A-Za-zÀ-ɏḀ-ỿ'’-]+")


_GREETING = re.compile(r"\b(?:hi|hello|hey|dear|thanks|thank you|cheers|bye)[,:!]?\s+$")


def _single(before: str, low: str, cue: bool) -> bool:
    """One word alone: a census first name that is not an ordinary word nor a country
    ("Kenji" yes, "Frank", "Kenya" no; "Sydney", "Alexandra" unless after "in", "from"), or
    a census surname that is no place ("Johansen" yes, "London" no); after a cue ("this is
    Kenji") any word that is neither an ordinary word nor a known place; after a greeting a
    census first name even when it is a word too ("Hi Maria", "Thanks, Grace")."""
    if low in countries():
        return False
    if low in common_words():
        return low in first_names() and _GREETING.search(before) is not None
    if low in first_names():
        if low in places() or low in proper_nouns():
            return _PLACE_BEFORE.search(before) is None
        return True
    if low in places() or low in proper_nouns():
        return False
    return cue or low.replace("’", "'") in surnames()


_MONTHS = _words(
    """jan january feb february mar march apr april may jun june jul july aug august sep sept
    september oct october nov november dec december"""
)
_DATE_AFTER = re.compile(r"\.?,?[ \t]+\d{1,4}(?:st|nd|rd|th)?\b")
_DATE_BEFORE = re.compile(r"\b\d{1,2}(?:st|nd|rd|th)?[ \t]+$")


_THEN_REGION = re.compile(rf",[ \t]*([{_UP}][\w'’-]+(?:[ \t]+[{_UP}][\w'’-]+)?)")


def _dated(text: str, start: int, end: int) -> bool:
    """A number right after or a day right before: "Jan 18", "18 Jan 2002"."""
    return bool(_DATE_AFTER.match(text, end) or _DATE_BEFORE.search(text, max(0, start - 6), start))


#: a list of single capitalised words: "Luke, Abderrahman, Johannes and Sam", "Hols and Lind",
#: or three or more with commas only (an e-mail header: "To: Biever, Jason, Cowan, Mike")
_LIST = re.compile(
    rf"(?<![\w'’-]){_WORD}(?:(?:,[ \t]+{_WORD})*,?[ \t]+(?:and|&)[ \t]+{_WORD}"
    rf"|(?:,[ \t]*{_WORD}){{2,}})(?![\w'’-])"
)


def _lists(text: str, found: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``found`` with the other members of each list one of whose members is a name (a list
    of people: "founders: Kluge, Gottschalk and Ogasahara"), except places and ordinary
    words that are no first names ("Luke" and "Sam" count here). A list whose members are
    mostly places that are no first names is a list of places: its members are not names
    ("London, Paris, Berlin and Rome")."""
    starts = {a for a, _ in found}
    added: list[tuple[int, int]] = []
    dropped: set[int] = set()
    for m in _LIST.finditer(text):
        members = list(_WORDS.finditer(m.group()))
        if not any(m.start() + w.start() in starts for w in members):
            continue
        lows = [w.group().lower() for w in members]
        if 2 * sum(1 for low in lows if low in places() and low not in first_names()) >= len(lows):
            dropped.update(m.start() + w.start() for w in members)
            continue
        for w, low in zip(members, lows, strict=True):
            if low in _STOP or low in places():
                continue
            if low in common_words() and low not in first_names():
                continue
            added.append((m.start() + w.start(), m.start() + w.end()))
    return sorted({s for s in (*found, *added) if s[0] not in dropped})


#: "Surname, Given" in an e-mail header line ("From: Rangel, Ina", "To: Jones, Tana; Kirk,
#: Steve"): the given name found, the word before the comma is the surname
_HEADER = re.compile(
    r"(?im)^[ \t>-]*(?:x[ \t]*-[ \t]*)?(?:to|from|cc|bcc|reply-to|sender)[ \t]*:[^\n]*"
)
_REVERSED = re.compile(
    rf"(?<![\w'’-])({_WORD}),[ \t]+({_WORD})(?:[ \t]+{_WORD})?(?=[ \t]*(?:[;,]|$))", re.M
)


def _reversed(text: str, found: list[tuple[int, int]]) -> list[tuple[int, int]]:
    starts = {a for a, _ in found}
    out: list[tuple[int, int]] = []
    for h in _HEADER.finditer(text):
        for m in _REVERSED.finditer(text, h.start(), h.end()):
            low = m.group(1).lower()
            if (
                m.start(2) in starts
                and low not in _STOP
                and (low not in common_words() or low in surnames())
            ):
                out.append(m.span(1))
    return out


def shop(text: str, end: int) -> bool:
    """A word + "'s" that names a shop: "Susie's Casuals", "at McDade's." ("Maria's
    mother", "Tretyakov's song" are people)."""
    m = _SHOP_AFTER.match(text, end)
    if m is None:
        return False
    word = (m.group(1) or "").lower()
    return not word or word in common_words() or word[:-1] in common_words()


def _of_after_name(text: str, start: int, found: list[tuple[int, int]]) -> bool:
    """The run follows "<a name found> of ": "Shovda Masaev of Future Plan" is a firm."""
    return bool(found) and text.endswith(" of ", 0, start) and found[-1][1] == start - 4


#: emoji, symbols and marks between a cue and the name ("Thanks, 👋 Kenji") are not words
_SYMBOLS = re.compile(r"[^\w\s,.:;?!'’&()-]+")


def listed(w: str) -> bool:
    """A first name or surname of the census or world lists (also :mod:`rlstream.pii.tagger`)."""
    return any(
        w in names for names in (first_names(), surnames(), world_first_names(), world_surnames())
    )


def _all_names(low: list[str]) -> bool:
    """Four or more words that are each a listed first name or surname and nothing else
    ("Maria Kenji Smith Tanaka"): a person, not a title or a firm."""
    common, proper = common_words(), proper_nouns()
    return all(
        listed(w)
        and w not in places()
        and (w not in common or w in first_names() or w in frequent_surnames())
        and not (w in proper and _DEMONYM.search(w) and w not in first_names())
        for w in low
    )


#: stop words that make the capitalised words next to them a place ("Na Kopci Street",
#: "New York", "Saint Louis"); a unit ("Apt.", "Suite") does not ("Ms. Angus Stuart Apt. 19")
_PLACE_STOP = _words(
    """street road avenue lane drive boulevard court place way north south east west new old
    saint st mount city county state park"""
)

#: stop words that end one name and may start another ("Ms. Angus Stuart Apt. 19", "Hi
#: Maria Thanks Kenji"); any other stop word inside a run ("Lord Of The Rings", "Quinta Do
#: Passadouro") makes the whole run a title or a place
_BREAKS = _words(
    """hi hello hey dear thanks thank regards cheers best sincerely please sorry ok okay good
    great morning afternoon evening mr mrs ms miss dr sir madam mister prof suite apt apartment
    unit floor yes no customer agent user assistant manager support team name address"""
)

#: sentence adverbs and connectives that open a capitalised run without being part of a
#: name: "Therefore Jerry's age is 10" is Jerry (as "Therefore Jerry" the census surname
#: rule vouched for it, and the name got a second placeholder beside its "Jerry" one)
_OPENERS = _words(
    """therefore thus hence however meanwhile finally afterwards afterward also altogether
    instead otherwise consequently additionally furthermore moreover besides next now since
    because although though while after before during until unless once later first second
    third lastly overall together still yet"""
)

_Segment = tuple[list[re.Match[str]], list[str]]


def _segments(text: str, m: re.Match[str]) -> list[_Segment]:
    """The words of a capitalised run, cut at greetings, titles and other stop words
    ("Ms. Angus Stuart Apt. 19": "Angus Stuart"; "Thanks Maria Gonzalez": "Maria Gonzalez");
    a part next to a street or place word is a place, left out ("Na Kopci Street")."""
    out: list[_Segment] = []
    words: list[re.Match[str]] = []
    low: list[str] = []
    before = ""
    for w in _WORDS.finditer(text, m.start(), m.end()):
        lw = w.group().lower().removesuffix("'s").removesuffix("’s")
        if not words and lw in _OPENERS:
            before = lw
            continue
        if lw in _STOP:
            if words and lw not in _BREAKS and lw not in _PLACE_STOP:
                return []  # "Lord Of The Rings"
            if words and before not in _PLACE_STOP and lw not in _PLACE_STOP:
                out.append((words, low))
            words, low, before = [], [], lw
            continue
        words.append(w)
        low.append(lw)
    if words and before not in _PLACE_STOP:
        out.append((words, low))
    return out


#: a name written in lower case after a cue that introduces one ("hi my name is sarah
#: connor", "thanks kenji", "this is dr. patel"): up to three lower-case words
_LOWER_CUE = re.compile(
    r"(?i:\b(?P<strong>my name is|my name's|name is|name's|signed|i am called)"
    r"|\b(?P<weak>thanks|thank you|thx|hi|hello|hey|dear|this is|it's|i'm|i am|regards|cheers|"
    r"bye|mr\.?|mrs\.?|ms\.?|dr\.?))[,:]?[ \t]+"
    r"(?=(?P<name>[a-z][a-z'’-]+(?:[ \t]+[a-z][a-z'’-]+){0,2}))"
)


def lower_case(text: str) -> list[tuple[int, int]]:
    """Lower-case names after a cue: after "my name is" the words up to the first stop word
    or ordinary word that is no listed first name; after a greeting, "this is" or a title
    only listed names that are no ordinary words ("thanks kenji" yes, "thanks again" no)."""
    out: list[tuple[int, int]] = []
    for m in _LOWER_CUE.finditer(text):
        strong = m.group("strong") is not None
        start = end = m.start("name")
        for w in re.finditer(r"[a-z][a-z'’-]+", m.group("name")):
            low = w.group()
            known = listed(low)
            first = low in first_names() or low in world_first_names()
            if low in _STOP or (low in common_words() and not (strong and first)):
                break
            if not strong and (not known or low in places()):
                break
            end = m.start("name") + w.end()
        if end > start:
            out.append((start, end))
    return out


def names(text: str) -> list[tuple[int, int]]:
    """Spans of person names in prose."""
    out: list[tuple[int, int]] = []
    for m in _RUN.finditer(text):
        for ws, low in _segments(text, m):
            _judge(text, [w.group() for w in ws], low, ws[0].start(), ws[-1].end(), out)
    if out and ("," in text or " and " in text or "&" in text):
        out = _lists(text, out)
    if out and ":" in text and "," in text:
        out = sorted({*out, *_reversed(text, out)})
    lower = [s for s in lower_case(text) if not any(a < s[1] and s[0] < b for a, b in out)]
    return sorted([*out, *lower]) if lower else out


def _judge(
    text: str, words: list[str], low: list[str], start: int, end: int, out: list[tuple[int, int]]
) -> None:
    """Append ``text[start:end]`` (the capitalised ``words``) to ``out`` when it is a name."""
    window = _SYMBOLS.sub("", text[max(0, start - 40) : start]).lower()
    window = re.sub(r"[ \t]{2,}", " ", window)
    cue = _CUE.search(window) is not None
    if cue and _STRONG.search(window) is not None and len(words) <= 3:
        out.append((start, end))
        return
    if len(words) > 3:
        if _all_names(low):
            out.append((start, end))
        return
    if low[0] in _PLACE_LEAD or low[-1] in _PLACE_TAIL or low[-1] in _ORG_LAST:
        return  # "Dora Creek", "Eli Moore Inc"
    if len(words) > 1 and " ".join(words).lower() in places():
        return  # "Maryland Heights", "Buenos Aires"
    if _ORG_AFTER.match(text, end) is not None or _STREET_AFTER.match(text, end):
        return
    if low[0] not in first_names() and _IN_PLACE.search(window) is not None:
        return
    if _AT_WORK.search(window) is not None or _of_after_name(text, start, out):
        return
    if len(words) == 1 and shop(text, end):
        return
    after = _THEN_REGION.match(text, end)
    if after is not None and after.group(1).lower() in countries():
        return  # "Paris, France", "Austin, Texas": a place
    if text.endswith("& ", 0, start):
        return  # "Forth & Towne"
    if len(words) == 1 and low[0] in _MONTHS and _dated(text, start, end):
        return  # "18 Jan 2002", "Jan 18": a month, not Jan Novák
    if len(words) == 1:
        if _single(window, low[0], cue):
            out.append((start, end))
    elif _vouched(words, low):
        out.append((start, end))
