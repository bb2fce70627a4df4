"""Whole-word keyword matching on a token stream: exact semantics and C-speed set lookups.

A text is lower-cased and tokenised once (words keep inner apostrophes, so "can't" is one
token; sentence ends become "." tokens). Single words are set lookups, phrases are
substring checks on the space-joined token stream padded with spaces, and ``prefix*``
entries match any token starting with the prefix. "hate" therefore never matches inside
"whatever": only whole tokens are ever compared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|\.")
_FOLD = str.maketrans({"’": "'", "!": ".", "?": ".", "\n": "."})


@dataclass(frozen=True, slots=True)
class Tokens:
    """A text's tokens, their set and the padded joined stream (for phrase checks)."""

    seq: tuple[str, ...]
    set: frozenset[str]
    joined: str

    @classmethod
    def of(cls, text: str) -> Tokens:
        seq = tuple(_TOKEN.findall(text.lower().translate(_FOLD)))
        return cls(seq, frozenset(seq), " " + " ".join(seq) + " ")


EMPTY = Tokens((), frozenset(), "  ")


class Lexicon:
    """A set of words, phrases and ``prefix*`` entries, matched against :class:`Tokens`."""

    __slots__ = ("phrases", "prefix_re", "prefixes", "words")

    def __init__(self, entries: Iterable[str]) -> None:
        words: set[str] = set()
        phrases: list[str] = []
        prefixes: list[str] = []
        for e in entries:
            e = e.lower().replace("’", "'")
            if e.endswith("*"):
                prefixes.append(e[:-1])
            elif " " in e:
                phrases.append(" " + e + " ")
            else:
                words.add(e)
        self.words = frozenset(words)
        self.phrases = tuple(phrases)
        self.prefixes = tuple(prefixes)
        alternation = "|".join(re.escape(p) for p in prefixes)
        self.prefix_re = re.compile(f" (?:{alternation})") if prefixes else None

    def hit(self, toks: Tokens) -> bool:
        if not self.words.isdisjoint(toks.set):
            return True
        joined = toks.joined
        for p in self.phrases:
            if p in joined:
                return True
        return self.prefix_re is not None and self.prefix_re.search(joined) is not None

    def __contains__(self, token: str) -> bool:
        return token in self.words or (bool(self.prefixes) and token.startswith(self.prefixes))
