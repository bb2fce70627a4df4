"""The rewards' scanners against the plain definitions they implement, on arbitrary input.

The plain definitions live here, not in the library: the fence regex (what
``fenced_blocks`` finds) and whole-word token matching (what ``Vocabulary``/``Lexicon.found``
answer). Everything else is tested on the real functions with known answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlstream.rewards import customer_support as cs
from rlstream.rewards._lexicon import Lexicon
from rlstream.rewards.toolcalls import canon, canon_args, fenced_blocks

pytestmark = pytest.mark.unit

#: a fenced block: the opening fence, an optional language word, the body up to the next fence
FENCE = re.compile(r"```[ \t]*(?:json|tool_call|tool|function)?[ \t]*\n?(.*?)```", re.DOTALL | re.I)
FENCE_PARTS = ["```", "`", "``", "json", "JSON", "tool", "tool_call", "function", "Tool_Call"]
fence_text = st.lists(
    st.sampled_from(FENCE_PARTS) | st.sampled_from([" ", "\t", "\n", "{}", "ſ", "K"]) | st.text(),
    max_size=14,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(fence_text)
def test_fenced_blocks_equal_the_fence_regex(text: str) -> None:
    assert fenced_blocks(text) == FENCE.findall(text)


@pytest.mark.parametrize(
    ("value", "typ", "want"),
    [
        (" 5.0 ", None, 5.0),
        ("1,200", None, 1200.0),
        ("-.5", None, -0.5),
        ("+3e2", "number", 300.0),
        ("True", None, True),
        ("false", "boolean", False),
        ("True", "string", "true"),
        ("  Hello ", None, "hello"),
        ("Straße", None, "strasse"),
        ("٣", None, 3.0),  # a Unicode decimal digit reads as float() reads it
        (",", None, ","),
        ("", None, ""),
        ("5", "string", "5"),
        (5, None, 5.0),
        (5, "string", "5"),
        (2.5, "string", "2.5"),
        (1 / 3, None, round(1 / 3, 9)),
        (True, None, True),
        (True, "string", "true"),
        (None, None, None),
        ({"A": " X ", 1: "2"}, None, {"A": "x", "1": 2.0}),
        ([" a ", (1, "b")], None, ["a", [1.0, "b"]]),
    ],
)
def test_canon_normalises_types(value: Any, typ: str | None, want: Any) -> None:
    assert repr(canon(value, typ)) == repr(want)  # types too: 1.0 vs True


scalar = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(["5", " 5.0 ", "1,200", "-.5", "True", "false", "٣", "+3e2", ",", ""])
)
values = st.recursive(
    scalar,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
    max_leaves=6,
)


@dataclass(frozen=True)
class Tokens:
    """Whole-word matching as defined: lower-case, fold sentence ends to ".", keep inner
    apostrophes; words are set members, phrases substrings of the space-joined stream."""

    seq: tuple[str, ...]
    set: frozenset[str]
    joined: str

    @classmethod
    def of(cls, text: str) -> Tokens:
        fold = str.maketrans({"’": "'", "!": ".", "?": ".", "\n": "."})
        seq = tuple(re.findall(r"[a-z0-9]+(?:'[a-z]+)?|\.", text.lower().translate(fold)))
        return cls(seq, frozenset(seq), " " + " ".join(seq) + " ")


def hit(lex: Lexicon, toks: Tokens) -> bool:
    """A lexicon entry occurs in the tokens: a word, a phrase or a ``prefix*``."""
    return (
        not lex.words.isdisjoint(toks.set)
        or any(p in toks.joined for p in lex.phrases)
        or any(t.startswith(lex.prefixes) for t in toks.seq if lex.prefixes)
    )


LEXICON_WORDS = [
    "refund",
    "refunded.",
    "can't",
    "can’t",
    "won't",
    "not",
    "never",
    "no",
    "sorry!",
    "Thank",
    "you're welcome",
    "happy to help",
    "hate",
    "whatever",
    "shut up",
    "your own fault",
    "can't you read",
    "fucking",
    "Shitty",
    "damn",
    "kill you",
    "manager?",
    "real person",
    "legal action",
    "escalated",
    "connect you with",
    "handing your case over",
    "a supervisor will",
    "send me your password",
    "give us the full card number",
    "pin",
    "o'refund",
    "rock'n'roll",
    "x'y'z",
    "İ",
    "K",
    "é",
    "\n",
    ".",
    "?!",
    "'",
    "’",
]
support_text = st.lists(
    st.sampled_from(LEXICON_WORDS) | st.text(max_size=6),
    max_size=14,
).flatmap(lambda ws: st.sampled_from([" ", "", "  ", ".", "\n"]).map(lambda sep: sep.join(ws)))


@settings(max_examples=600, deadline=None)
@given(support_text)
def test_vocabulary_scan_equals_token_matching(text: str) -> None:
    scan, toks = cs._VOCAB.scan(text), Tokens.of(text)
    lexicons = [cs._RESOLVE, cs._NEGATION, cs._POLITE, cs._RUDE, cs._ABUSE]
    for lex in [*lexicons, cs._ESCALATION_ASK, cs._ESCALATED]:
        assert lex.found(scan) == hit(lex, toks)
    assert cs._asks_escalation(text) == hit(cs._ESCALATION_ASK, toks)


@pytest.mark.parametrize(
    ("text", "resolves"),
    [
        ("I have refunded your order.", True),
        ("I have not refunded it yet.", False),
        ("No. Refunded it just now.", True),  # the negation is in the previous sentence
        ("We never, ever, at all refunded", False),
        ("not one two three four five refunded", True),  # six tokens back: out of scope
        ("Thanks for waiting!", False),
    ],
)
def test_resolves_needs_an_unnegated_action_word(text: str, resolves: bool) -> None:
    assert cs._resolves(cs._VOCAB.scan(text)) is resolves


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ("Your card was charged once.", True),
        ("Please send me your password.", False),
        ("Give us the full card number!", False),
        ("Your PIN stays private. Send me the order id.", True),  # a secret word, not asked for
        ("damn it", False),
        ("what a fucking mess", False),
    ],
)
def test_safe_refuses_abuse_and_secret_solicitation(text: str, safe: bool) -> None:
    assert cs._safe(cs._VOCAB.scan(text)) is safe


ARG_TYPES = {"f": {"a": "string", "b": "number", "c": "integer", "d": "boolean"}}


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), values, max_size=5),
    st.sampled_from(["f", "g"]),
)
def test_canon_args_equals_canon_per_argument(args: dict[str, Any], name: str) -> None:
    want = {k: canon(v, ARG_TYPES.get(name, {}).get(k)) for k, v in args.items()}
    assert repr(canon_args(name, args, ARG_TYPES)) == repr(want)
