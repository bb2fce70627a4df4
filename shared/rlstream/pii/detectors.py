"""PII and secret detectors: compiled once, validated after matching.

Regexes find candidates; checksums and context then reject look-alikes: card numbers must
pass Luhn and carry a known issuer prefix, IBANs must pass ISO 7064 mod-97, IP addresses must
parse, generic ``key=value`` secrets must look random (entropy), and bare digit runs count as
phone / card numbers only when the words around them say so. That keeps order ids, prices,
dates and version strings out.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from rlstream.pii import freetext
from rlstream.pii.validators import (
    card_ok,
    generic_key_ok,
    iban_valid,
    ipv4_ok,
    ipv6_ok,
    password_ok,
    phone_intl_ok,
    phone_national_ok,
)

Kind = Literal[
    "EMAIL", "PHONE", "CARD", "IBAN", "SSN", "IP", "API_KEY", "TOKEN", "SECRET", "DOB", "ADDRESS",
    "NAME", "PASSPORT",
]  # fmt: skip
#: kinds found only through the key that holds them ({"dob": ...}) or a cue word before them
KINDS: tuple[Kind, ...] = (
    "EMAIL",
    "PHONE",
    "CARD",
    "IBAN",
    "SSN",
    "IP",
    "API_KEY",
    "TOKEN",
    "SECRET",
)
CONTEXT_KINDS: tuple[Kind, ...] = ("DOB", "ADDRESS", "NAME", "PASSPORT")
#: priority of free-text findings (rlstream.pii.freetext): below every structured detector,
#: so an e-mail or phone number inside an address line keeps its own kind
_FREETEXT_PRIORITY: dict[str, int] = {"PASSPORT": 57, "DOB": 56, "ADDRESS": 30, "NAME": 25}


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    kind: Kind
    priority: int

    @property
    def length(self) -> int:
        return self.end - self.start


Validator = Callable[[str, str, int], bool]  # (matched value, whole text, start) -> keep?


@dataclass(frozen=True, slots=True)
class Detector:
    kind: Kind
    priority: int
    pattern: re.Pattern[str]
    group: int = 0
    validate: Validator | None = None
    #: skip the regex unless one of these occurs in the lower-cased text (empty: always run)
    needs: tuple[str, ...] = ()
    #: skip the regex on texts with fewer digits than any match holds
    min_digits: int = 0
    #: a hand-written linear matcher used instead of ``pattern`` (text, pos, endpos) ->
    #: spans; for shapes whose regex would backtrack quadratically on hostile input
    finder: Callable[[str, int, int], list[tuple[int, int]]] | None = None


_SECRET_KEY_NAMES = (
    r"(?:[a-z0-9]+[_-])*(?:api[_-]?key|apikey|secret(?:[_-]?(?:access[_-]?)?key)?|"
    r"access[_-]?key(?:[_-]?id)?|auth[_-]?token|access[_-]?token|refresh[_-]?token|"
    r"client[_-]?secret|private[_-]?key|token)"
)

_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END [A-Z ]{0,40}PRIVATE KEY-----")


def _pem_blocks(text: str, pos: int, endpos: int) -> list[tuple[int, int]]:
    """PEM private-key blocks, BEGIN to the first END after it, in linear time.

    The regex ``BEGIN…[\\s\\S]+?…END`` rescans to the end of the text from every BEGIN
    with no END: 300 KB of repeated BEGIN lines took ~55 s. Here each marker is found
    once and BEGINs are paired with ENDs by one forward walk.
    """
    ends = [(m.start(), m.end()) for m in _PEM_END.finditer(text, pos, endpos)]
    if not ends:
        return []
    out: list[tuple[int, int]] = []
    i = 0
    cursor = pos
    for m in _PEM_BEGIN.finditer(text, pos, endpos):
        if m.start() < cursor:
            continue
        while i < len(ends) and ends[i][0] <= m.end():
            i += 1
        if i == len(ends):
            break
        out.append((m.start(), ends[i][1]))
        cursor = ends[i][1]
        i += 1
    return out


# Priority: higher wins when spans overlap (then the longer span).
DETECTORS: tuple[Detector, ...] = (
    Detector(
        "SECRET",
        100,
        _PEM_BEGIN,
        needs=("-----begin",),
        finder=_pem_blocks,
    ),
    Detector(
        "TOKEN",
        90,
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        needs=("eyj",),
    ),
    Detector(
        "TOKEN", 89, re.compile(r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{16,}=*)"), 1, needs=("bearer",)
    ),
    Detector(
        "TOKEN",
        88,
        re.compile(r"(?i)\bauthorization:\s*basic\s+([A-Za-z0-9+/]{12,}={0,2})"),
        1,
        needs=("basic",),
    ),
    Detector(
        "API_KEY",
        85,
        re.compile(
            r"\b(?:sk-(?:proj-|ant-(?:api\d\d-)?|live-|test-)?[A-Za-z0-9_-]{20,}"
            r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}"
            r"|gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}"
            r"|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}"
            r"|(?:sk|pk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|glpat-[A-Za-z0-9_-]{20,}"
            r"|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36})(?![A-Za-z0-9_-])"
        ),
        needs=(
            "sk-",
            "akia",
            "asia",
            "agpa",
            "aida",
            "aroa",
            "anpa",
            "anva",
            "aipa",
            "gh",
            "github_pat_",
            "xox",
            "aiza",
            "sk_",
            "pk_",
            "rk_",
            "glpat-",
            "hf_",
            "npm_",
        ),
    ),
    Detector(
        "TOKEN",
        84,
        re.compile(
            r"(?i)\b(?:session[_ -]?|auth[_ -]?|access[_ -]?|refresh[_ -]?|id[_ -]?|csrf[_ -]?)?token\b"
            r"[\"']?\s*(?:[:=]|is)\s*[\"']?([A-Za-z0-9_\-./+=]{16,})"
        ),
        1,
        generic_key_ok,
        needs=("token",),
    ),
    Detector(
        "API_KEY",
        83,
        re.compile(
            rf"(?i)\b(?:{_SECRET_KEY_NAMES})\b[\"']?\s*(?:[:=]|is)\s*[\"']?([A-Za-z0-9_\-./+=]{{16,}})"
        ),
        1,
        generic_key_ok,
        needs=("key", "secret", "token", "auth"),
    ),
    Detector(
        "SECRET",
        80,
        re.compile(r"(?<=://)[^\s:/@\"'<>]{1,64}:[^\s@/\"'<>]{1,128}(?=@)"),
        needs=("://",),
    ),
    Detector(
        "SECRET",
        79,
        re.compile(
            r"(?i)\b(?:password|passwd|pwd|passcode|passphrase)\b[\"']?\s*(?:[:=]|is)\s*[\"']?([^\s\"',;]{4,64})"
        ),
        1,
        password_ok,
        needs=("pass", "pwd"),
    ),
    Detector(
        "DOB",
        58,
        re.compile(
            r"(?i)\b(?:dob|d\.o\.b\.?|date of birth|birth ?date|birthday|born(?: on)?)\b"
            r"[^\d\n]{0,30}?(\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4})"
        ),
        1,
        needs=("dob", "d.o.b", "birth", "born"),
        min_digits=6,
    ),
    Detector(
        "EMAIL",
        70,
        re.compile(
            r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+'-]{0,63}@"
            r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
        ),
        needs=("@",),
    ),
    Detector(
        "IBAN",
        65,
        re.compile(r"(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![\w])"),
        0,
        iban_valid,
        min_digits=10,
    ),
    Detector(
        "CARD",
        60,
        re.compile(r"(?<![\w.,-])\d(?:[ -]?\d){12,18}(?![\w]|[.,-]\d|[ -]\d)"),
        0,
        card_ok,
        min_digits=13,
    ),
    Detector(
        "SSN",
        55,
        re.compile(r"(?<![\w-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w-])"),
        min_digits=9,
    ),
    Detector(
        "SSN",
        54,
        re.compile(
            r"(?i)\b(?:ssn|social security(?: number| no\.?)?|ss#)\s*(?:is|:|#|number|no\.?)?\s*"
            r"(\d{3} ?\d{2} ?\d{4})\b"
        ),
        1,
        needs=("ssn", "social", "ss#"),
        min_digits=9,
    ),
    Detector(
        "IP",
        50,
        re.compile(
            r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:%[A-Za-z0-9]+)?(?![\w:])"
        ),
        0,
        ipv6_ok,
        needs=(":",),
    ),
    Detector(
        "IP",
        49,
        re.compile(
            r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
            r"(?![\w]|\.\d)"
        ),
        0,
        ipv4_ok,
        min_digits=4,
    ),
    Detector(
        "PHONE",
        40,
        re.compile(
            r"(?<![\w+.-])(?<!\d[ .-])(?:\+[1-9]\d{0,2}[ .-]?|00[1-9]\d{0,2}[ .-])(?:\(\d{1,4}\)[ .-]?)?"
            r"\d{1,5}(?:[ .-]?\d{1,5}){1,5}(?![\w]|[.-]\w)"
        ),
        0,
        phone_intl_ok,
        min_digits=8,
    ),
    Detector(
        "PHONE",
        39,
        re.compile(
            r"(?<![\w+.-])(?:1[ .-])?(?:\(\d{3}\) ?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\w-]|\.\d)"
        ),
        min_digits=10,
    ),
    Detector(
        "PHONE",
        38,
        re.compile(
            r"(?<![\w+.-])(?<!\d[ .-])(?:0\d{1,4}|\(0\d{1,4}\))(?:/\d{3,8}|(?:[ .-]\d{2,8}){1,4})(?![\w]|[./-]\d)"
        ),
        0,
        phone_national_ok,
        min_digits=10,
    ),
    Detector(
        "PHONE",
        37,
        re.compile(
            r"(?i)\b(?:phone|tel|telephone|mobile|cell|call|text|whatsapp|sms|fax|contact|reach)"
            r"\b[^\d\n]{0,20}(\+?\d{10,13})\b"
        ),
        1,
        needs=(
            "phone",
            "tel",
            "mobile",
            "cell",
            "call",
            "text",
            "whatsapp",
            "sms",
            "fax",
            "contact",
            "reach",
        ),
        min_digits=10,
    ),
)

#: keys whose string value is a secret whatever it looks like (JSON arguments, metadata)
SECRET_KEY = re.compile(rf"(?i)^(?:{_SECRET_KEY_NAMES}|authorization|credentials?)$")
PASSWORD_KEY = re.compile(r"(?i)^(?:password|passwd|pwd|passcode|passphrase|pin)$")

_NO_DIGITS = str.maketrans("", "", "0123456789")
_CACHE_MAX_LEN = 4096


def find_spans(text: str) -> list[Span]:
    """Non-overlapping PII spans in ``text``, left to right.

    Results for short texts are cached: system prompts, tool-result templates and stock
    replies repeat across conversations, so most of a stream's strings were seen before.
    """
    if len(text) < 2:
        return []  # a name can be two letters ("Bo"); a reply may be just "Kenji"
    if len(text) <= _CACHE_MAX_LEN:
        return list(_find_cached(text))
    return _find(text)


@lru_cache(maxsize=16384)
def _find_cached(text: str) -> tuple[Span, ...]:
    return tuple(_find(text))


def _scan(det: Detector, text: str, found: list[Span]) -> None:
    if det.finder is not None:
        found += [Span(a, b, det.kind, det.priority) for a, b in det.finder(text, 0, len(text))]
        return
    for m in det.pattern.finditer(text):
        start, end = m.span(det.group)
        if start < 0:
            continue
        if det.validate is not None and not det.validate(m.group(det.group), text, start):
            continue
        found.append(Span(start, end, det.kind, det.priority))


def _find(text: str) -> list[Span]:
    """Every detector whose cheap pre-check (a cue word, enough digits) passes, on the whole
    text; the free-text detectors of :mod:`rlstream.pii.freetext` first."""
    low = text.lower()
    digits = len(text) - len(text.translate(_NO_DIGITS))
    found = [
        Span(a, b, kind, _FREETEXT_PRIORITY[kind])  # type: ignore[arg-type]
        for a, b, kind in freetext.find(text, low, digits)
    ]
    for det in DETECTORS:
        if digits < det.min_digits or (det.needs and not any(n in low for n in det.needs)):
            continue
        _scan(det, text, found)
    return found if len(found) <= 1 else _non_overlapping(found)


def _non_overlapping(found: list[Span]) -> list[Span]:
    """Highest priority (then longest) first; a span overlapping a chosen one is dropped.
    Chosen spans are kept sorted, so each check looks at two neighbours (was a scan of
    every chosen span: quadratic on a text that is all e-mail addresses)."""
    found.sort(key=lambda s: (-s.priority, -s.length, s.start))
    starts: list[int] = []
    chosen: list[Span] = []
    for span in found:
        i = bisect.bisect_right(starts, span.start)
        if i > 0 and chosen[i - 1].end > span.start:
            continue
        if i < len(chosen) and chosen[i].start < span.end:
            continue
        starts.insert(i, span.start)
        chosen.insert(i, span)
    return chosen
