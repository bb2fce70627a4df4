"""PII and secret detectors: compiled once, validated after matching.

Regexes find candidates; checksums and context then reject look-alikes: card numbers must
pass Luhn and carry a known issuer prefix, IBANs must pass ISO 7064 mod-97, IP addresses must
parse, generic ``key=value`` secrets must look random (entropy), and bare digit runs count as
phone / card numbers only when the words around them say so. That keeps order ids, prices,
dates and version strings out.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Kind = Literal[
    "EMAIL", "PHONE", "CARD", "IBAN", "SSN", "IP", "API_KEY", "TOKEN", "SECRET", "DOB", "ADDRESS", "NAME"
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
CONTEXT_KINDS: tuple[Kind, ...] = ("DOB", "ADDRESS", "NAME")


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
    #: cheap pre-check: at least one of these must occur in the lower-cased text ("" = any
    #: digit, ":" pair = two colons); skips the regex on most text
    needs: tuple[str, ...] = ("",)
    #: fewest digits a text must hold for this detector to possibly match
    min_digits: int = 0
    #: matches lie inside one digit cluster: search only there, not the whole text
    windowed: bool = False


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


_CARD_PREFIX = re.compile(
    r"^(?:4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|3(?:0[0-5]|[68])|6(?:011|5|4[4-9]|2)|35)"
)
_CARD_GROUPS = frozenset(
    {
        (4, 4, 4, 4),
        (4, 6, 5),
        (4, 6, 4),
        (4, 4, 4, 4, 3),
        (4, 4, 4, 1),
        (4, 4, 4, 4, 2),
        (4, 4, 4, 3),
    }
)
_NEG_ID_CONTEXT = re.compile(
    r"(?:order|tracking|invoice|ref(?:erence)?|confirmation|booking|ticket|case|shipment|"
    r"parcel|serial|sku|account|acct|isbn|item|id|no\.?|number|#)\W{0,3}$"
)
_CARD_CONTEXT = re.compile(
    r"\b(?:card|visa|mastercard|amex|discover|credit|debit|cc|pan)(?:\s*(?:number|no\.?|#))?\b"
)


def _card(value: str, text: str, start: int) -> bool:
    digits = value.replace(" ", "").replace("-", "")
    if not 13 <= len(digits) <= 19 or not _CARD_PREFIX.match(digits) or not luhn_ok(digits):
        return False
    if digits == value:  # a bare digit run: refuse when the words before call it an id
        before = text[max(0, start - 30) : start].lower()
        if _NEG_ID_CONTEXT.search(before):
            # the id cue ends the window; a card cue wins only when it is the last word
            cues = list(_CARD_CONTEXT.finditer(before))
            return bool(cues) and cues[-1].end() >= len(before.rstrip(" :#.-"))
        return True
    groups = tuple(len(g) for g in re.split(r"[ -]", value))
    return groups in _CARD_GROUPS


_IBAN_LEN = {
    "AD": 24, "AE": 23, "AT": 20, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29, "CH": 21,
    "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24,
    "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
    "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
    "LB": 28, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
    "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25,
    "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "TN": 24,
    "TR": 26, "UA": 29, "VG": 24, "XK": 20,
}  # fmt: skip


def iban_ok(value: str) -> bool:
    s = value.replace(" ", "").upper()
    if s[2:4] in ("00", "01", "99"):
        return False  # ISO 13616 check digits run 02..98
    expected = _IBAN_LEN.get(s[:2])
    if expected is not None and len(s) != expected:
        return False
    if not 15 <= len(s) <= 34:
        return False
    rearranged = s[4:] + s[:4]
    try:
        return int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1
    except ValueError:
        return False


def _iban(value: str, text: str, start: int) -> bool:
    return iban_ok(value)


_VERSION_CONTEXT = re.compile(
    r"(?:version|ver\.?|v|build|release|firmware|kernel|rev|os|ios|android)\s*$"
)


def _ipv4(value: str, text: str, start: int) -> bool:
    return not _VERSION_CONTEXT.search(text[max(0, start - 12) : start].lower())


def _ipv6(value: str, text: str, start: int) -> bool:
    if sum(ch not in ":" for ch in value) < 6:
        return False
    try:
        ipaddress.IPv6Address(value.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _digits(value: str) -> int:
    return sum(ch.isdigit() for ch in value)


def _id_context(text: str, start: int) -> bool:
    """The words just before call the number an id (order, invoice, ticket ...)."""
    return _NEG_ID_CONTEXT.search(text[max(0, start - 30) : start].lower()) is not None


def _phone_intl(value: str, text: str, start: int) -> bool:
    n = _digits(value)
    if value.startswith("00"):
        return 10 <= n <= 17 and not _id_context(text, start)
    return 8 <= n <= 15


def _phone_national(value: str, text: str, start: int) -> bool:
    return 10 <= _digits(value) <= 11 and not _id_context(text, start)


_HEX = frozenset("0123456789abcdefABCDEF")


def _entropy(value: str) -> float:
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def looks_random(value: str) -> bool:
    """A generic secret value: long, mixed letters and digits, high entropy."""
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    if len(value) < 16 or not has_digit or not has_alpha:
        return False
    # hex has at most 4 bits per char, so random hex reads lower than base62/base64
    return _entropy(value) >= (2.8 if all(c in _HEX for c in value) else 3.2)


def _generic_key(value: str, text: str, start: int) -> bool:
    return looks_random(value)


def password_like(value: str) -> bool:
    """A password value, not a word like "required": digits, symbols or mixed case."""
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return has_digit or has_symbol or mixed


def _password(value: str, text: str, start: int) -> bool:
    return password_like(value)


_SECRET_KEY_NAMES = (
    r"(?:[a-z0-9]+[_-])*(?:api[_-]?key|apikey|secret(?:[_-]?(?:access[_-]?)?key)?|"
    r"access[_-]?key(?:[_-]?id)?|auth[_-]?token|access[_-]?token|refresh[_-]?token|"
    r"client[_-]?secret|private[_-]?key|token)"
)

# Priority: higher wins when spans overlap (then the longer span).
DETECTORS: tuple[Detector, ...] = (
    Detector(
        "SECRET",
        100,
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]+?-----END [A-Z ]*PRIVATE KEY-----"),
        needs=("-----begin",),
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
        _generic_key,
        needs=("token",),
    ),
    Detector(
        "API_KEY",
        83,
        re.compile(
            rf"(?i)\b(?:{_SECRET_KEY_NAMES})\b[\"']?\s*(?:[:=]|is)\s*[\"']?([A-Za-z0-9_\-./+=]{{16,}})"
        ),
        1,
        _generic_key,
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
        _password,
        needs=("pass", "pwd"),
    ),
    Detector(
        "DOB",
        58,
        re.compile(
            r"(?i)\b(?:dob|d\.o\.b\.?|date of birth|birth ?date|birthday|born(?: on)?)\b\W{0,4}"
            r"(?:is\s+)?(\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4})"
        ),
        1,
        needs=("dob", "d.o.b", "birth", "born"),
        min_digits=6,
    ),
    Detector(
        "EMAIL",
        70,
        re.compile(
            r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@"
            r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
        ),
        needs=("@",),
    ),
    Detector(
        "IBAN",
        65,
        re.compile(r"(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![\w])"),
        0,
        _iban,
        min_digits=10,
        windowed=True,
    ),
    Detector(
        "CARD",
        60,
        re.compile(r"(?<![\w.,-])\d(?:[ -]?\d){12,18}(?![\w]|[.,-]\d|[ -]\d)"),
        0,
        _card,
        min_digits=13,
        windowed=True,
    ),
    Detector(
        "SSN",
        55,
        re.compile(r"(?<![\w-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w-])"),
        min_digits=9,
        windowed=True,
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
        _ipv6,
        needs=(":2",),
    ),
    Detector(
        "IP",
        49,
        re.compile(
            r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
            r"(?![\w]|\.\d)"
        ),
        0,
        _ipv4,
        min_digits=4,
        windowed=True,
    ),
    Detector(
        "PHONE",
        40,
        re.compile(
            r"(?<![\w+.-])(?<!\d[ .-])(?:\+[1-9]\d{0,2}[ .-]?|00[1-9]\d{0,2}[ .-])(?:\(\d{1,4}\)[ .-]?)?"
            r"\d{1,5}(?:[ .-]?\d{1,5}){1,5}(?![\w]|[.-]\w)"
        ),
        0,
        _phone_intl,
        min_digits=8,
        windowed=True,
    ),
    Detector(
        "PHONE",
        39,
        re.compile(
            r"(?<![\w+.-])(?:1[ .-])?(?:\(\d{3}\) ?|\d{3}[ .-])\d{3}[ .-]\d{4}(?![\w-]|\.\d)"
        ),
        min_digits=10,
        windowed=True,
    ),
    Detector(
        "PHONE",
        38,
        re.compile(
            r"(?<![\w+.-])(?<!\d[ .-])(?:0\d{1,4}|\(0\d{1,4}\))(?:[ .-]\d{2,6}){1,4}(?![\w]|[.-]\d)"
        ),
        0,
        _phone_national,
        min_digits=10,
        windowed=True,
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

_DIGIT = re.compile(r"\d")


_NEEDLES: tuple[str, ...] = tuple(
    sorted({n for d in DETECTORS for n in d.needs if n not in ("", ":2")})
)
_BY_NEEDLE: dict[str, tuple[int, ...]] = {
    n: tuple(i for i, d in enumerate(DETECTORS) if n in d.needs) for d in DETECTORS for n in d.needs
}


_NO_DIGITS = str.maketrans("", "", "0123456789")
_CACHE_MAX_LEN = 4096


def find_spans(text: str) -> list[Span]:
    """Non-overlapping PII spans in ``text``, left to right.

    Results for short texts are cached: system prompts, tool-result templates and stock
    replies repeat across conversations, so most of a stream's strings were seen before.
    """
    if len(text) < 7:
        return []
    if len(text) <= _CACHE_MAX_LEN:
        return list(_find_cached(text))
    return _find(text)


@lru_cache(maxsize=16384)
def _find_cached(text: str) -> tuple[Span, ...]:
    return tuple(_find(text))


#: a run of digits (and upper-case letters, for IBANs) with at most two separator chars
#: between them; every windowed detector's match lies inside one such run
_CLUSTER = re.compile(r"[+(]?(?:[A-Z]{2})?\d(?:[ ().\-/]{0,2}[0-9A-Z])*")


def _scan(det: Detector, text: str, pos: int, endpos: int, found: list[Span]) -> None:
    for m in det.pattern.finditer(text, pos, endpos):
        start, end = m.span(det.group)
        if start < 0:
            continue
        if det.validate is not None and not det.validate(m.group(det.group), text, start):
            continue
        found.append(Span(start, end, det.kind, det.priority))


def _find(text: str) -> list[Span]:
    found: list[Span] = []
    low = text.lower()
    present = [n for n in _NEEDLES if n in low]
    digits = 0
    if _DIGIT.search(text) is not None:
        present.append("")
        digits = len(text) - len(text.translate(_NO_DIGITS))
    if ":" in text and text.count(":") >= 2:
        present.append(":2")
    if not present:
        return found
    windowed: list[Detector] = []
    for i in sorted({i for n in present for i in _BY_NEEDLE[n]}):
        det = DETECTORS[i]
        if det.min_digits > digits:
            continue
        if det.windowed:
            windowed.append(det)
        else:
            _scan(det, text, 0, len(text), found)
    if windowed:
        n = len(text)
        for cm in _CLUSTER.finditer(text):
            cluster = cm.group()
            nd = len(cluster) - len(cluster.translate(_NO_DIGITS))
            if nd < 4:
                continue
            a, b = cm.span()
            for det in windowed:
                if det.min_digits <= nd:
                    # lookbehinds see the text before ``a``; two chars after ``b`` feed lookaheads
                    _scan(det, text, a, min(n, b + 2), found)
    if len(found) <= 1:
        return found
    found.sort(key=lambda s: (-s.priority, -s.length, s.start))
    chosen: list[Span] = []
    for span in found:
        if all(span.end <= c.start or span.start >= c.end for c in chosen):
            chosen.append(span)
    chosen.sort(key=lambda s: s.start)
    return chosen
