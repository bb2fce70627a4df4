"""score() (one-pass counts, exact-match shortcut, int tallies) agrees with the matching
algorithm written out plainly, on random calls, references, schemas and options."""

from __future__ import annotations

import bisect
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlstream.rewards import make_result
from rlstream.rewards.base import RewardResult
from rlstream.rewards.tool_calling import ToolCallingReward
from rlstream.rewards.toolcalls import Call, call_key, canon_args

pytestmark = pytest.mark.unit

NAMES = ["lookup", "refund", "escalate", "made_up"]
TYPES = {"lookup": {"id": "string"}, "refund": {"id": "string", "amount": "number"}, "escalate": {}}
ARGS = [{}, {"id": "A"}, {"id": "B"}, {"id": "A", "amount": 5}, {"amount": "5"}, {"id": "a "}]


def _plain_score(
    r: ToolCallingReward,
    ref: list[tuple[str, dict[str, Any]]],
    calls: list[Call],
    n_turns: int,
    types: dict[str, dict[str, str]],
) -> RewardResult:
    declared = frozenset(types)
    invented = [c for c in calls if declared and c.name not in declared]
    counts = Counter(c.key for c in calls)
    spam = {k for k, n in counts.items() if n > r.max_repeats}
    unique: list[Call] = []
    seen: set[str] = set()
    for c in calls:
        if c.key not in seen:
            seen.add(c.key)
            unique.append(c)
    used: set[int] = set()
    good: set[str] = set()
    positions: list[int] = []
    name_hits = 0
    fractions: list[float] = []
    reasons: list[str] = []
    for name, ref_args in ref:
        best, best_frac = -1, -1.0
        for i, c in enumerate(unique):
            if i in used or c.name != name:
                continue
            hits = sum(1 for k, v in ref_args.items() if k in c.args and c.args[k] == v)
            frac = hits / len(ref_args) if ref_args else 1.0
            if frac > best_frac:
                best, best_frac = i, frac
            if frac == 1.0:
                break
        if best < 0:
            fractions.append(0.0)
            reasons.append(f"missing call {name}")
            continue
        used.add(best)
        name_hits += 1
        fractions.append(best_frac)
        if best_frac == 1.0:
            positions.append(best)
            good.add(unique[best].key)
        else:
            reasons.append(f"wrong arguments for {name}")
    tails: list[int] = []
    for x in positions:
        i = bisect.bisect_left(tails, x)
        tails[i : i + 1] = [x]
    n_ref = len(ref)
    correct = len(positions) / n_ref if n_ref else (1.0 if not unique else 0.0)
    in_order = len(tails) / len(positions) if positions else 1.0
    extra = [c for i, c in enumerate(unique) if i not in used]
    precision = 1.0 - 0.5 * (len(extra) / len(unique)) if unique else 1.0
    if extra:
        reasons.append("extra calls: " + ", ".join(sorted({c.name for c in extra})))
    if r.ordered and in_order < 1.0:
        reasons.append("calls out of order")
    if invented:
        reasons.append("invented tools: " + ", ".join(sorted({c.name for c in invented})))
    if spam:
        reasons.append("repeated identical calls")
    order = (0.5 + 0.5 * in_order) if r.ordered else 1.0
    score = correct * order * precision * (0.5 if invented else 1.0) * (0.5 if spam else 1.0)
    per: list[list[float]] = [[] for _ in range(n_turns)]
    seen = set()
    for c in calls:
        ok = c.key in good and c.key not in seen and not (declared and c.name not in declared)
        seen.add(c.key)
        per[c.turn].append(1.0 if ok else 0.0)
    return make_result(
        reward=r.name,
        version=r.version,
        score=score,
        threshold=r.threshold,
        components={
            "tool_selection": name_hits / n_ref if n_ref else 1.0,
            "arguments": sum(fractions) / n_ref if n_ref else 1.0,
            "correct_calls": correct,
            "order": in_order,
            "precision": precision,
            "no_invented": 0.0 if invented else 1.0,
            "no_spam": 0.0 if spam else 1.0,
        },
        reasons=reasons,
        turn_scores=[sum(v) / len(v) if v else 1.0 for v in per],
    )


call = st.tuples(st.sampled_from(NAMES), st.sampled_from(ARGS), st.integers(0, 2))


@settings(max_examples=500, deadline=None)
@given(
    ref=st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(ARGS)), max_size=4),
    made=st.lists(call, max_size=5),
    declared=st.booleans(),
    ordered=st.booleans(),
    max_repeats=st.integers(1, 2),
    exact=st.booleans(),
)
def test_score_equals_the_plain_algorithm(
    ref: list[Any], made: list[Any], declared: bool, ordered: bool, max_repeats: int, exact: bool
) -> None:
    types = TYPES if declared else {}
    canon_ref = [(n, canon_args(n, a, types)) for n, a in ref]
    if exact:  # make the shortcut's case common: the calls are the reference
        made = [(n, a, i % 3) for i, (n, a) in enumerate(ref)]
    calls = []
    for n, a, turn in sorted(made, key=lambda x: x[2]):
        ca = canon_args(n, a, types)
        calls.append(Call(n, ca, call_key(n, ca), turn, True))
    r = ToolCallingReward(ordered=ordered, max_repeats=max_repeats)
    got = r.score(canon_ref, calls, 3, types)
    want = _plain_score(r, canon_ref, calls, 3, types)
    assert got == want
    assert RewardResult.model_validate(got.model_dump()) == got
