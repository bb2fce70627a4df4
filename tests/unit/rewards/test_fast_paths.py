"""Hot-path rewrites agree with the plain definitions they replace, on arbitrary input."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlstream.rewards._toolcalls import _FENCE, canon, fenced_blocks

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
