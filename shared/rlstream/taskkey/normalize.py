"""Opener normalisation: what stays of a prompt once phrasing noise is removed.

Lower-cased, PII replaced by typed placeholders, digits masked, whitespace collapsed: two
conversations that start with the same system prompt, tool set and (normalised) first user
message are the same task played again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping

from pydantic import JsonValue

from rlstream.pii.redact import Redactor

_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[a-z0-9#<>_]+")

#: function words and chat filler that carry no task identity (used for near-dup merging)
STOPWORDS = frozenset(
    """
    a an the and or but of for in on at to from with by as is are was were be been being am
    do does did done can could would should will shall may might must i me my mine myself we
    us our you your yours he she it its they them their this that these those there here
    what which who whom whose when where why how hi hello hey dear please pls thanks thank
    thx ok okay so just also too very really some any all about into over up down out if
    then than want wanted wanna like need needs needed help get got have has had would'd i'm
    i'd i've im id ive let lets let's know tell could you're youre can't cant don't dont
    doesn't isn't not no yes good morning afternoon evening there's theres trying try able
    question quick kindly
    """.split()  # noqa: SIM905
)


def normalise_text(text: str | None, redacted: bool = False) -> str:
    """Lower-case, redact PII (unless already done), mask digits, collapse whitespace."""
    if not text:
        return ""
    if not redacted:
        text = Redactor().text(text)
    text = _DIGITS.sub("#", text.lower())
    return _SPACE.sub(" ", text).strip()


def short_hash(*parts: str) -> str:
    h = hashlib.blake2b(digest_size=8)
    for p in parts:
        h.update(p.encode())
        h.update(b"\x1f")
    return h.hexdigest()


def toolset_hash(tools: Iterable[Mapping[str, JsonValue]]) -> str:
    """The set of declared tool names (order-free): same tools, same hash."""
    names = sorted({str(t.get("name", "")) for t in tools})
    return short_hash(*names) if names else ""


def content_tokens(normalised: str) -> list[str]:
    """Words that carry the task: no stopwords, no bare masked numbers."""
    return [
        w for w in _WORD.findall(normalised) if w not in STOPWORDS and w.strip("#") and len(w) > 1
    ]
