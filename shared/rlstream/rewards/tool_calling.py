"""tool_calling: right tools, right arguments, right order, nothing invented, no spam.

The reference (the calls a correct rollout makes) comes from, in order: ``context.reference``;
a label carrying ``expected_calls``/``tool_calls``; the consensus of the *passing* peers in
``context.group`` (the grader passes only peers that passed the other rewards). With none of
these the reward raises :class:`MissingContextError`: a constant 0.6 for a correct call (the
peer's behaviour) teaches nothing.

``score = correct * order * precision * invented * spam`` where ``correct`` is the share of
reference calls made with every reference argument equal after type normalisation,
``order = 0.5 + 0.5 * (in-order share)``, ``precision = 1 - 0.5 * (share of extra calls)``,
and invented tools (not declared in ``transcript.tools``) or repeated identical calls each
halve the score.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar

import orjson

from rlstream.errors import ConfigError, MissingContextError
from rlstream.rewards._common import make_result, reject_unknown, threshold_option
from rlstream.rewards._toolcalls import (
    DEPENDENT_CACHES,
    Call,
    call_from_obj,
    calls_of,
    canon_args,
    is_free_text,
    schema_types,
)
from rlstream.rewards.base import RewardContext, RewardResult
from rlstream.transcript import Transcript

_REF_KEYS = ("expected_calls", "tool_calls", "calls", "expected_tool_calls")

Ref = list[tuple[str, dict[str, Any]]]


class ToolCallingReward:
    """Grades the tool calls of a rollout against a reference sequence."""

    name: ClassVar[str] = "tool_calling"
    version: ClassVar[str] = "1.0.0"
    endorsed_features: ClassVar[tuple[str, ...]] = ("tool_calls", "tool:*")
    #: the grader gives this reward the passing peers of its group (second pass)
    uses_group: ClassVar[bool] = True
    _OPTIONS: ClassVar[tuple[str, ...]] = ("threshold", "ordered", "max_repeats")

    def __init__(
        self,
        threshold: float | None = None,
        ordered: bool = True,
        max_repeats: int = 1,
        **options: Any,
    ) -> None:
        reject_unknown(self.name, options, self._OPTIONS)
        self.threshold = threshold_option(threshold, 0.8)
        if max_repeats < 1:
            raise ConfigError("tool_calling: max_repeats must be >= 1")
        self.ordered = bool(ordered)
        self.max_repeats = int(max_repeats)

    # -- reference -----------------------------------------------------------------------
    def reference(self, t: Transcript, context: RewardContext, types: dict[str, Any]) -> Ref:
        """The expected calls, canonicalised; raises MissingContextError when none exist."""
        for source in (context.reference, context.label, t.label):
            ref = _parse_reference(source, types, allow_bare_list=source is context.reference)
            if ref is not None:
                return ref
        peers = [p for p in context.group if p.conversation_id != t.conversation_id]
        if peers:
            return consensus([calls_of(p, types) for p in peers])
        raise MissingContextError(
            "tool_calling needs a reference: context.reference, a label with expected_calls, "
            "or passing peers in context.group (grade with grade_many to derive it)"
        )

    # -- scoring ---------------------------------------------------------------------------
    def __call__(self, transcript: Transcript, context: RewardContext) -> RewardResult:
        types = schema_types(transcript.tools)
        ref = self.reference(transcript, context, types)
        calls = calls_of(transcript, types)
        reasons: list[str] = []

        declared = frozenset(types) if transcript.tools else frozenset()
        invented = [c for c in calls if declared and c.name not in declared]
        counts = Counter(c.key for c in calls)
        spam = {k for k, n in counts.items() if n > self.max_repeats}
        unique: list[Call] = []
        seen: set[str] = set()
        for c in calls:
            if c.key not in seen:
                seen.add(c.key)
                unique.append(c)

        used: set[int] = set()
        good_keys: set[str] = set()
        positions: list[int] = []
        name_hits = 0
        arg_fractions: list[float] = []
        for name, ref_args in ref:
            best, best_frac = -1, -1.0
            for i, c in enumerate(unique):
                if i in used or c.name != name:
                    continue
                frac = _arg_fraction(ref_args, c.args)
                if frac > best_frac:
                    best, best_frac = i, frac
                if frac == 1.0:
                    break
            if best < 0:
                arg_fractions.append(0.0)
                reasons.append(f"missing call {name}")
                continue
            used.add(best)
            name_hits += 1
            arg_fractions.append(best_frac)
            if best_frac == 1.0:
                positions.append(best)
                good_keys.add(unique[best].key)
            else:
                reasons.append(f"wrong arguments for {name}")

        n_ref = len(ref)
        correct = len(positions) / n_ref if n_ref else (1.0 if not unique else 0.0)
        in_order = _lis(positions) / len(positions) if positions else 1.0
        extra = [c for i, c in enumerate(unique) if i not in used]
        precision = 1.0 - 0.5 * (len(extra) / len(unique)) if unique else 1.0
        if extra:
            reasons.append("extra calls: " + ", ".join(sorted({c.name for c in extra})))
        if self.ordered and in_order < 1.0:
            reasons.append("calls out of order")
        if invented:
            reasons.append("invented tools: " + ", ".join(sorted({c.name for c in invented})))
        if spam:
            reasons.append("repeated identical calls")

        order_factor = (0.5 + 0.5 * in_order) if self.ordered else 1.0
        score = (
            correct * order_factor * precision * (0.5 if invented else 1.0) * (0.5 if spam else 1.0)
        )
        return make_result(
            reward=self.name,
            version=self.version,
            score=score,
            threshold=self.threshold,
            components={
                "tool_selection": name_hits / n_ref if n_ref else 1.0,
                "arguments": sum(arg_fractions) / n_ref if n_ref else 1.0,
                "correct_calls": correct,
                "order": in_order,
                "precision": precision,
                "no_invented": 0.0 if invented else 1.0,
                "no_spam": 0.0 if spam else 1.0,
            },
            reasons=reasons,
            turn_scores=_turn_scores(transcript, calls, good_keys, declared, spam),
        )


def _arg_fraction(ref_args: dict[str, Any], got: dict[str, Any]) -> float:
    if not ref_args:
        return 1.0
    hits = sum(1 for k, v in ref_args.items() if k in got and got[k] == v)
    return hits / len(ref_args)


def _lis(xs: list[int]) -> int:
    """Length of the longest increasing subsequence (patience sorting)."""
    import bisect

    tails: list[int] = []
    for x in xs:
        i = bisect.bisect_left(tails, x)
        if i == len(tails):
            tails.append(x)
        else:
            tails[i] = x
    return len(tails)


def _turn_scores(
    t: Transcript, calls: list[Call], good: set[str], declared: frozenset[str], spam: set[str]
) -> list[float]:
    """Each assistant turn: share of its calls that are correct, first-time, declared calls;
    a turn without calls did nothing wrong with tools and scores 1."""
    n_turns = sum(1 for m in t.messages if m.role == "assistant")
    per: list[list[float]] = [[] for _ in range(n_turns)]
    seen: set[str] = set()
    for c in calls:
        ok = c.key in good and c.key not in seen and not (declared and c.name not in declared)
        if c.key in spam and c.key in seen:
            ok = False
        seen.add(c.key)
        per[c.turn].append(1.0 if ok else 0.0)
    return [sum(v) / len(v) if v else 1.0 for v in per]


_REF_CACHE: dict[tuple[bytes, int], Ref | None] = {}
DEPENDENT_CACHES.append(_REF_CACHE)


def _parse_reference(source: Any, types: dict[str, Any], *, allow_bare_list: bool) -> Ref | None:
    """Cached :func:`_parse_reference_uncached` (a task's reference repeats per rollout)."""
    if source is None or not isinstance(source, dict | list):
        return None
    key = (orjson.dumps(source) + (b"L" if allow_bare_list else b"M"), id(types))
    if key in _REF_CACHE:
        return _REF_CACHE[key]
    ref = _parse_reference_uncached(source, types, allow_bare_list=allow_bare_list)
    if len(_REF_CACHE) > 4096:
        _REF_CACHE.clear()
    _REF_CACHE[key] = ref
    return ref


def _parse_reference_uncached(
    source: Any, types: dict[str, Any], *, allow_bare_list: bool
) -> Ref | None:
    """A reference from a list of calls or a mapping holding one under a known key."""
    items: Any = None
    if isinstance(source, dict):
        items = next((source[k] for k in _REF_KEYS if isinstance(source.get(k), list)), None)
    elif isinstance(source, list) and allow_bare_list:
        items = source
    if items is None:
        return None
    ref: Ref = []
    for item in items:
        found = call_from_obj(item)
        if found is None:
            raise ConfigError(f"tool_calling: unreadable reference call {item!r}")
        name, args = found
        ref.append((name, canon_args(name, args, types)))
    return ref


def consensus(peer_calls: list[list[Call]]) -> Ref:
    """The calls the passing peers agree on.

    The most common name sequence wins (ties: lexicographically smallest); for each call an
    argument is kept when a strict majority of those peers give it the same value and it is
    not free text (prose differs between equally good rollouts).
    """
    seqs = [tuple(dict.fromkeys(c.key for c in calls)) for calls in peer_calls]
    by_names: dict[tuple[str, ...], list[list[Call]]] = {}
    for calls, keys in zip(peer_calls, seqs, strict=True):
        uniq = {c.key: c for c in calls}
        chosen = [uniq[k] for k in keys]
        by_names.setdefault(tuple(c.name for c in chosen), []).append(chosen)
    names, members = min(by_names.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ref: Ref = []
    for pos, name in enumerate(names):
        votes: dict[str, Counter[str]] = {}
        values: dict[str, Any] = {}
        for chosen in members:
            for k, v in chosen[pos].args.items():
                enc = orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode()
                votes.setdefault(k, Counter())[enc] += 1
                values[enc] = v
        args: dict[str, Any] = {}
        for k, counter in votes.items():
            enc, n = min(counter.items(), key=lambda kv: (-kv[1], kv[0]))
            if n * 2 > len(members) and not is_free_text(values[enc]):
                args[k] = values[enc]
        ref.append((name, args))
    return ref
