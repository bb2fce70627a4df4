"""Hot-path rewrites agree with the plain definitions they replace, on arbitrary input."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlstream.rewards import customer_support as cs
from rlstream.rewards._lexicon import Tokens
from rlstream.rewards._toolcalls import _FENCE, canon, canon_args, fenced_blocks

pytestmark = pytest.mark.unit

FENCE_PARTS = ["```", "`", "``", "json", "JSON", "tool", "tool_call", "function", "Tool_Call"]
fence_text = st.lists(
    st.sampled_from(FENCE_PARTS) | st.sampled_from([" ", "\t", "\n", "{}", "ſ", "K"]) | st.text(),
    max_size=14,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(fence_text)
def test_fenced_blocks_equal_the_fence_regex(text: str) -> None:
    assert fenced_blocks(text) == _FENCE.findall(text)


_NUMERIC = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _plain_canon(value: Any, typ: str | None = None) -> Any:
    """canon() as first written: isinstance chain, the numeric regex on every string."""
    if isinstance(value, dict):
        return {str(k): _plain_canon(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain_canon(v) for v in value]
    if isinstance(value, bool):
        return value if typ != "string" else str(value).lower()
    if isinstance(value, int | float):
        if typ == "string":
            x = float(value)
            return str(int(x)) if x.is_integer() else repr(x)
        return round(float(value), 9)
    if isinstance(value, str):
        s = value.strip()
        low = s.casefold()
        if typ == "string":
            return low
        if typ in (None, "boolean") and low in ("true", "false"):
            return low == "true"
        if (typ in (None, "number", "integer")) and _NUMERIC.fullmatch(s.replace(",", "")):
            return round(float(s.replace(",", "")), 9)
        return low
    return value


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


@settings(max_examples=400, deadline=None)
@given(values, st.sampled_from([None, "string", "number", "integer", "boolean", "object"]))
def test_canon_equals_the_plain_definition(value: Any, typ: str | None) -> None:
    assert repr(canon(value, typ)) == repr(_plain_canon(value, typ))  # types too: 1.0 vs True


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


def _plain_resolves(toks: Tokens) -> bool:
    seq = toks.seq
    for i, tok in enumerate(seq):
        if tok in cs._RESOLVE.words:
            window = []
            for j in range(i - 1, max(-1, i - 6), -1):
                if seq[j] == ".":
                    break
                window.append(seq[j])
            if cs._NEGATION.words.isdisjoint(window):
                return True
    return False


def _plain_safe(toks: Tokens) -> bool:
    if cs._ABUSE.hit(toks):
        return False
    return cs._SECRET_WORDS.isdisjoint(toks.set) or not cs._SOLICIT.search(" ".join(toks.seq))


@settings(max_examples=600, deadline=None)
@given(support_text)
def test_vocabulary_scan_equals_token_matching(text: str) -> None:
    scan, toks = cs._VOCAB.scan(text), Tokens.of(text)
    lexicons = [cs._RESOLVE, cs._NEGATION, cs._POLITE, cs._RUDE, cs._ABUSE]
    for lex in [*lexicons, cs._ESCALATION_ASK, cs._ESCALATED]:
        assert lex.found(scan) == lex.hit(toks)
    assert cs._resolves(scan) == _plain_resolves(toks)
    assert cs._safe(scan) == _plain_safe(toks)
    assert cs._asks_escalation(text) == cs._ESCALATION_ASK.hit(toks)


ARG_TYPES = {"f": {"a": "string", "b": "number", "c": "integer", "d": "boolean"}}


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), values, max_size=5),
    st.sampled_from(["f", "g"]),
)
def test_canon_args_equals_canon_per_argument(args: dict[str, Any], name: str) -> None:
    want = {k: _plain_canon(v, ARG_TYPES.get(name, {}).get(k)) for k, v in args.items()}
    assert repr(canon_args(name, args, ARG_TYPES)) == repr(want)
