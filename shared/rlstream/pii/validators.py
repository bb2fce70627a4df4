"""Validators that turn regex candidates into detections: checksums and context.

Each takes (matched value, whole text, match start) so it can look at the words before a
match, e.g. to tell "order number 4111..." from "card 4111...".
"""

from __future__ import annotations

import ipaddress
import math
import re


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


def card_ok(value: str, text: str, start: int) -> bool:
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


def iban_valid(value: str, text: str, start: int) -> bool:
    return iban_ok(value)


_VERSION_CONTEXT = re.compile(
    r"(?:version|ver\.?|v|build|release|firmware|kernel|rev|os|ios|android)\s*$"
)


def ipv4_ok(value: str, text: str, start: int) -> bool:
    return not _VERSION_CONTEXT.search(text[max(0, start - 12) : start].lower())


def ipv6_ok(value: str, text: str, start: int) -> bool:
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


def phone_intl_ok(value: str, text: str, start: int) -> bool:
    n = _digits(value)
    if value.startswith("00"):
        return 10 <= n <= 17 and not _id_context(text, start)
    return 8 <= n <= 15


def phone_national_ok(value: str, text: str, start: int) -> bool:
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


def generic_key_ok(value: str, text: str, start: int) -> bool:
    return looks_random(value)


def password_like(value: str) -> bool:
    """A password value, not a word like "required": digits, symbols or mixed case."""
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return has_digit or has_symbol or mixed


def password_ok(value: str, text: str, start: int) -> bool:
    return password_like(value)
