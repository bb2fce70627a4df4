"""Realistic, checksum-valid PII values for planting in sample logs.

Cards pass Luhn, IBANs pass mod-97, SSNs avoid the never-issued areas: a redactor that only
catches well-formed values is tested against well-formed values.
"""

from __future__ import annotations

import random
import string

KINDS = ("email", "phone", "card", "iban", "ssn", "ip", "api_key")

_FIRST = ("maria", "james", "li", "fatima", "oliver", "priya", "lucas", "amara", "noah", "yuki")
_LAST = ("garcia", "smith", "wang", "okafor", "novak", "patel", "silva", "kim", "jensen", "rossi")
_DOMAINS = ("example.com", "mail.example.org", "inbox.example.net", "corp.example.co.uk")


def email(rng: random.Random) -> str:
    sep = rng.choice((".", "_", ""))
    return (
        f"{rng.choice(_FIRST)}{sep}{rng.choice(_LAST)}{rng.randint(1, 99)}@{rng.choice(_DOMAINS)}"
    )


def phone(rng: random.Random) -> str:
    def n(k: int) -> str:
        return "".join(rng.choice(string.digits) for _ in range(k))

    return rng.choice(
        (
            f"+1 415-555-{n(4)}",
            f"(212) 555-{n(4)}",
            f"+44 20 7946 {n(4)}",
            f"+49 30 {n(3)} {n(4)}",
        )
    )


def _luhn_digit(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def card(rng: random.Random) -> str:
    prefix = rng.choice(("4", "51", "52", "37"))
    length = 15 if prefix == "37" else 16
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    digits = body + _luhn_digit(body)
    if length == 16 and rng.random() < 0.6:
        return " ".join(digits[i : i + 4] for i in range(0, 16, 4))
    return digits


def iban(rng: random.Random) -> str:
    country, bban_len = rng.choice((("DE", 18), ("GB", 18), ("FR", 23), ("NL", 14)))
    if country == "GB":
        bban = "NWBK" + "".join(rng.choice(string.digits) for _ in range(14))
    elif country == "NL":
        bban = "ABNA" + "".join(rng.choice(string.digits) for _ in range(10))
    else:
        bban = "".join(rng.choice(string.digits) for _ in range(bban_len))
    rearranged = bban + country + "00"
    numeric = "".join(str(int(ch, 36)) for ch in rearranged)
    check = 98 - int(numeric) % 97
    raw = f"{country}{check:02d}{bban}"
    if rng.random() < 0.5:
        return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4))
    return raw


def ssn(rng: random.Random) -> str:
    area = rng.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"


def ip(rng: random.Random) -> str:
    first = rng.choice((23, 45, 81, 99, 104, 151, 185, 203))
    return f"{first}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"


def api_key(rng: random.Random) -> str:
    alnum = string.ascii_letters + string.digits
    kind = rng.randrange(3)
    if kind == 0:
        return "sk-" + "".join(rng.choice(alnum) for _ in range(40))
    if kind == 1:
        return "AKIA" + "".join(
            rng.choice(string.ascii_uppercase + string.digits) for _ in range(16)
        )
    return "ghp_" + "".join(rng.choice(alnum) for _ in range(36))


MAKERS = {
    "email": email,
    "phone": phone,
    "card": card,
    "iban": iban,
    "ssn": ssn,
    "ip": ip,
    "api_key": api_key,
}

#: how a customer drops each kind into a message (no reward keyword appears in these)
SENTENCES = {
    "email": (
        "You can reach me at {v}.",
        "My email is {v} if you need it.",
        "Reply to {v} please.",
    ),
    "phone": ("My number is {v}.", "Call me on {v} if that is easier.", "Phone: {v}"),
    "card": ("The card I used was {v}.", "It went on my card {v}.", "Card number {v}"),
    "iban": ("My bank account is {v}.", "Send it to IBAN {v}.", "IBAN: {v}"),
    "ssn": ("My SSN is {v} if you need to verify me.", "For verification: {v}."),
    "ip": ("I was on my home connection, IP {v}.", "The site logged my IP as {v}."),
    "api_key": ("Our integration key is {v}, in case it helps.", "We use the key {v} for the API."),
}


def plant(rng: random.Random) -> tuple[str, str, str]:
    """(kind, value, sentence) for one planted item."""
    kind = rng.choice(KINDS)
    value = MAKERS[kind](rng)
    return kind, value, rng.choice(SENTENCES[kind]).format(v=value)
