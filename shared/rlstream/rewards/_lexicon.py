"""Whole-word keyword matching on a token stream: exact semantics and C-speed set lookups.

A text is lower-cased and tokenised once (words keep inner apostrophes, so "can't" is one
token; sentence ends become "." tokens). Single words are set lookups, phrases are
substring checks on the space-joined token stream padded with spaces, and ``prefix*``
entries match any token starting with the prefix. "hate" therefore never matches inside
"whatever": only whole tokens are ever compared.

:class:`Vocabulary`: several lexicons share one scan per text (one
regex pass, one set intersection giving a bit mask), after which a lexicon is a bit test;
phrases and prefixes are checked only when their first word / prefix text is present.
tests/unit/rewards/test_fast_paths.py holds the plain token-matching definition it must agree with.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: words (inner apostrophes kept) and sentence ends ("!", "?", a newline or ".")
_SCAN_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[.!?\n]")
ENDS = frozenset(".!?\n")


class Lexicon:
    """A set of words, phrases and ``prefix*`` entries, matched against a :class:`Scan`."""

    __slots__ = (
        "phrase_bit",
        "phrases",
        "prefix_bit",
        "prefix_re",
        "prefixes",
        "word_bit",
        "words",
    )

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
        self.word_bit = self.phrase_bit = self.prefix_bit = 0  # set by a Vocabulary

    def __contains__(self, token: str) -> bool:
        return token in self.words or (bool(self.prefixes) and token.startswith(self.prefixes))

    def found(self, scan: Scan) -> bool:
        """A word, phrase or prefix of this lexicon occurs in a :class:`Vocabulary` scan
        (this lexicon must belong to it)."""
        mask = scan.mask
        if mask & self.word_bit:
            return True
        if mask & self.phrase_bit:
            joined = scan.joined()
            for p in self.phrases:
                if p in joined:
                    return True
        if mask & self.prefix_bit:
            return self.prefix_re is not None and self.prefix_re.search(scan.joined()) is not None
        return False


class Scan:
    """One text seen through a :class:`Vocabulary`: its tokens and which entries may hit."""

    __slots__ = ("_joined", "mask", "seq")

    def __init__(self, seq: list[str], mask: int) -> None:
        self.seq = seq
        self.mask = mask
        self._joined: str | None = None

    def joined(self) -> str:
        """The padded token stream phrases are looked up in (built on first use)."""
        if self._joined is None:
            self._joined = " " + " ".join(self.seq) + " "
        return self._joined


class Vocabulary:
    """Several lexicons matched with one scan per text.

    Each lexicon gets three bits: a word of it occurs, the first word of one of its phrases
    occurs, the text of one of its prefixes occurs. A scan is one regex pass and one set
    intersection; :meth:`Lexicon.found` then decides with a bit test in nearly every case.
    """

    def __init__(self, *lexicons: Lexicon) -> None:
        masks: dict[str, int] = {}
        prefixes: list[tuple[str, int]] = []
        for i, lex in enumerate(lexicons):
            lex.word_bit, lex.phrase_bit, lex.prefix_bit = 1 << 3 * i, 2 << 3 * i, 4 << 3 * i
            for w in lex.words:
                masks[w] = masks.get(w, 0) | lex.word_bit
            for p in lex.phrases:
                if ENDS.intersection(p):  # a scan keeps "!" where plain folding has "."
                    raise ValueError(f"a phrase cannot span a sentence end: {p.strip()!r}")
                first = p.split()[0]
                masks[first] = masks.get(first, 0) | lex.phrase_bit
            prefixes.extend((p, lex.prefix_bit) for p in lex.prefixes)
        self._masks = masks
        self._words = frozenset(masks)
        self._prefixes = tuple(prefixes)

    def scan(self, text: str) -> Scan:
        low = text.lower()
        if "’" in low:
            low = low.replace("’", "'")
        seq = _SCAN_TOKEN.findall(low)
        mask = 0
        masks = self._masks
        for w in self._words.intersection(seq):
            mask |= masks[w]
        for p, bit in self._prefixes:
            if p in low:
                mask |= bit
        return Scan(seq, mask)
