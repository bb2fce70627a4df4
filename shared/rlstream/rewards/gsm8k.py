"""gsm8k: extract the final numeric answer and compare it with the gold label.

Extraction order (first that yields a number wins): the last ``#### x``; the last
``\\boxed{x}``; the last "the answer is x" / "final answer: x" / "answer: x"; the last number
in the reply. Normalisation strips thousands separators, currency symbols and trailing
units, reads fractions (``3/4``, ``\\frac{3}{4}``, ``1 1/2``) and percentages (``25%`` is
compared as 25 and as 0.25). Gold comes from ``context.label`` or ``transcript.label`` in any
common form; without one the reward raises :class:`MissingContextError` rather than
scoring a correct answer 0 (the peer's behaviour).
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

from rlstream.errors import MissingContextError, RewardError
from rlstream.rewards._common import reject_unknown, threshold_option
from rlstream.rewards.base import RewardContext, RewardResult, make_result
from rlstream.transcript import Transcript

_FRAC_TEX = re.compile(r"\\[dt]?frac\s*\{\s*([-−]?[\d.,]+)\s*\}\s*\{\s*([-−]?[\d.,]+)\s*\}")
_MIXED = re.compile(r"(?<![\d.,/])([-−]?\d+)\s+(\d+)\s*/\s*(\d+)(?![\d/])")
_FRAC = re.compile(r"(?<![\d.,/])([-−]?\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)(?![\d/])")
_NUMBER = re.compile(
    r"(?<![\w.])[-−]?\s?[$€£¥]?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s?%)?"
    r"|(?<![\w.])\.\d+(?:\s?%)?"
)
_FIRST_NUM = re.compile(r"[-−]?\d|[-−]?\.\d")
_HASHES = re.compile(r"####\s*([^\n]*)")
_ANSWER_IS = re.compile(
    r"(?:the\s+(?:final\s+)?answer\s+is|final\s+answer\s*[:=]|answer\s*[:=]|^\s*a\s*:)\s*([^\n]*)",
    re.IGNORECASE | re.MULTILINE,
)
_BOXED = "\\boxed{"


def _boxed(text: str) -> str | None:
    """Content of the last \\boxed{...}, nested braces respected."""
    start = text.rfind(_BOXED)
    if start < 0:
        return None
    i, depth = start + len(_BOXED), 1
    for j in range(i, len(text)):
        ch = text[j]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[i:j]
    return None


def _to_float(token: str) -> tuple[float, bool] | None:
    """(value, is_percent) of one number token, currency and separators removed."""
    try:
        return float(token), False  # the common case: a plain number
    except ValueError:
        pass
    s = token.replace("−", "-").replace(" ", "")
    pct = s.endswith("%")
    s = s.rstrip("%")
    for ch in "$€£¥,":
        if ch in s:
            s = s.replace(ch, "")
    try:
        return float(s), pct
    except ValueError:
        return None


def parse_number(fragment: str) -> list[float] | None:
    """Candidate values of the *first* number in a fragment (fractions, percent aware).

    A percentage yields both readings (25 and 0.25) so "25%" matches either gold form.
    """
    frag = fragment.replace("−", "-") if "−" in fragment else fragment
    if "frac" in frag:  # each pattern below needs its literal ("frac", "/") to match
        m = _FRAC_TEX.search(frag)
        if m:
            return _fraction(m.group(1), m.group(2))
    first = _FIRST_NUM.search(frag)
    if first is None:
        return None
    head = frag[first.start() :]
    if "/" in head:
        mixed = _MIXED.match(head)
        if mixed:
            whole, num, den = (float(x) for x in mixed.groups())
            if den:
                sign = -1.0 if whole < 0 else 1.0
                return [whole + sign * num / den]
        frac = _FRAC.match(head)
        if frac:
            return _fraction(frac.group(1), frac.group(2))
    n = _NUMBER.search(frag)
    if not n:
        return None
    got = _to_float(n.group(0))
    if got is None:
        return None
    value, pct = got
    return [value, value / 100.0] if pct else [value]


def _fraction(num: str, den: str) -> list[float] | None:
    try:
        d = float(den.replace(",", ""))
        return [float(num.replace(",", "")) / d] if d else None
    except ValueError:
        return None


_TAIL = 64


def _last_number(text: str) -> list[float] | None:
    """The last number; only the tail is scanned (numbers are short, replies are not)."""
    tail_start = max(0, len(text) - _TAIL)
    while True:
        window = text[tail_start:]
        last = None
        for m in _NUMBER.finditer(window):
            last = m
        if last is not None and (last.start() > 0 or tail_start == 0):
            break
        if tail_start == 0:
            return None
        tail_start = max(0, tail_start - 4 * _TAIL)  # no number in the tail: look further back
    # a fraction or mixed number ending at the last number ("... = 3/4", "1 1/2") reads whole
    start = max(0, last.start() - 24)
    for pat in (_MIXED, _FRAC):
        for fm in pat.finditer(window, start):
            if fm.end() == last.end():
                got = parse_number(fm.group(0))
                if got:
                    return got
    return parse_number(last.group(0))


def extract_answer(text: str) -> tuple[list[float] | None, str]:
    """(candidate values, method) of the final answer in a reply."""
    if "####" in text:
        hashes = _HASHES.findall(text)
        got = parse_number(hashes[-1]) if hashes else None
        if got is not None:
            return got, "hashes"
    if _BOXED in text:
        boxed = _boxed(text)
        got = parse_number(boxed) if boxed is not None else None
        if got is not None:
            return got, "boxed"
    said = _ANSWER_IS.findall(text)
    got = parse_number(said[-1]) if said else None
    if got is not None:
        return got, "answer_is"
    got = _last_number(text)
    return (got, "last_number") if got is not None else (None, "none")


def parse_gold(label: Any) -> float:
    """The gold answer from a number, "#### 18", "A: 18", "\\boxed{18}", "18" or a mapping
    holding one of those under answer/gold/label/target."""
    if isinstance(label, bool):
        raise RewardError(f"gsm8k: label {label!r} is not a number")
    if isinstance(label, int | float):
        return float(label)
    if isinstance(label, dict):
        for key in ("answer", "gold", "label", "target", "final_answer"):
            if key in label:
                return parse_gold(label[key])
        raise RewardError(f"gsm8k: label mapping has no answer field: {sorted(label)}")
    if isinstance(label, str):
        values, _ = extract_answer(label)
        if values:
            return values[0]
    raise RewardError(f"gsm8k: no number in label {label!r}")


class Gsm8kReward:
    """Exact-answer maths reward with numeric tolerance."""

    name: ClassVar[str] = "gsm8k"
    version: ClassVar[str] = "1.0.0"
    endorsed_features: ClassVar[tuple[str, ...]] = ("numbers",)
    _OPTIONS: ClassVar[tuple[str, ...]] = ("threshold", "rel_tol", "abs_tol")

    def __init__(
        self,
        threshold: float | None = None,
        rel_tol: float = 1e-4,
        abs_tol: float = 1e-6,
        **options: Any,
    ) -> None:
        reject_unknown(self.name, options, self._OPTIONS)
        self.threshold = threshold_option(threshold, 0.5)
        self.rel_tol = float(rel_tol)
        self.abs_tol = float(abs_tol)

    def _match(self, values: list[float] | None, gold: float) -> bool:
        """Integers compare exactly (50449 is not 50447, however close); anything else
        within tolerance, so 1/6 matches a gold of 0.166667."""
        for v in values or ():
            if gold.is_integer() and v.is_integer():
                if v == gold:
                    return True
            elif math.isclose(v, gold, rel_tol=self.rel_tol, abs_tol=self.abs_tol):
                return True
        return False

    def __call__(self, transcript: Transcript, context: RewardContext) -> RewardResult:
        label = context.label if context.label is not None else transcript.label
        if label is None:
            raise MissingContextError(
                "gsm8k needs a gold answer: context.label or transcript.label"
            )
        gold = parse_gold(label)
        reasons: list[str] = []
        replies = [m.content for m in transcript.messages if m.role == "assistant"]
        final = None
        for c in reversed(replies):
            if c:
                final = c
                break
        values, method = extract_answer(final) if final else (None, "none")
        correct = self._match(values, gold)
        verdict = 1.0 if correct else 0.0
        if len(replies) == 1:  # the common case: the only reply is the final answer
            turn_scores: tuple[float, ...] = (verdict if final else 0.0,)
        else:
            turn_scores = tuple(
                [
                    0.0
                    if not c
                    else verdict
                    if c is final
                    else 1.0
                    if self._match(extract_answer(c)[0], gold)
                    else 0.0
                    for c in replies
                ]
            )
        if final is None:
            reasons.append("no final assistant answer")
        elif values is None:
            reasons.append("no number in the final answer")
        elif not correct:
            reasons.append(f"answer {values[0]:g} != gold {gold:g} (via {method})")
        return make_result(
            reward=self.name,
            version=self.version,
            score=verdict,
            threshold=self.threshold,
            components={
                "extracted": 0.0 if values is None else 1.0,
                "correct": verdict,
                "explicit_format": 1.0 if method in _EXPLICIT else 0.0,
            },
            reasons=reasons,
            turn_scores=turn_scores,
        )


_EXPLICIT = frozenset({"hashes", "boxed", "answer_is"})
