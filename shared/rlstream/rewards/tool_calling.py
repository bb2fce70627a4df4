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

from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from rlstream.errors import ConfigError, MissingContextError
from rlstream.rewards._common import reject_unknown, threshold_option
from rlstream.rewards._consensus import Ref, Votes, consensus
from rlstream.rewards.base import RewardContext, RewardResult, clamp, make_result
from rlstream.rewards.toolcalls import (
    Call,
    call_from_obj,
    canon_args,
    extract_calls,
    extract_with_turns,
    schema_types,
)
from rlstream.transcript import Transcript

__all__ = ["ToolCallingReward", "consensus"]

_REF_KEYS = ("expected_calls", "tool_calls", "calls", "expected_tool_calls")
_NO_REFERENCE = (
    "tool_calling needs a reference: context.reference, a label with expected_calls, "
    "or passing peers in context.group (grade with grade_many to derive it)"
)

Types = dict[str, dict[str, str]]


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
    def reference(self, t: Transcript, context: RewardContext, types: Types) -> Ref:
        """The expected calls, canonicalised; raises MissingContextError when none exist."""
        ref = _explicit_reference(t, context, types)
        if ref is not None:
            return ref
        peers = [p for p in context.group if p.conversation_id != t.conversation_id]
        if peers:
            return consensus([extract_calls(p, types) for p in peers])
        raise MissingContextError(_NO_REFERENCE)

    def group_scorer(
        self, peers: Sequence[Transcript]
    ) -> Callable[[Transcript, RewardContext], RewardResult]:
        """A scorer for one group: ``scorer(t, ctx)`` equals ``self(t, ctx)`` with
        ``ctx.group`` = the peers whose conversation id differs from ``t``'s.

        The peers' calls are extracted and counted once (:class:`Votes`), so a group of g
        rollouts costs O(g), not O(g^2) (grade_many's second pass uses this).
        """
        return _GroupScorer(self, tuple(peers))

    # -- scoring ---------------------------------------------------------------------------
    def __call__(self, transcript: Transcript, context: RewardContext) -> RewardResult:
        types = schema_types(transcript.tools)
        ref = self.reference(transcript, context, types)
        calls, n_turns = extract_with_turns(transcript, types)
        return self.score(ref, calls, n_turns, types)

    def score(self, ref: Ref, calls: list[Call], n_turns: int, types: Types) -> RewardResult:
        """The verdict on ``calls`` (made over ``n_turns`` assistant turns) against ``ref``;
        ``types`` (the declared tools) is empty when the rollout declares none."""
        if len(calls) == len(ref) and _exact(ref, calls, types):
            return make_result(
                reward=self.name,
                version=self.version,
                score=1.0,
                threshold=self.threshold,
                components=_ALL_ONES,
                turn_scores=(1.0,) * n_turns,
            )
        reasons: list[str] = []
        counts: dict[str, int] = {}
        unique: list[Call] = []
        invented: set[str] = set()
        for c in calls:
            k = c.key
            if k in counts:
                counts[k] += 1
            else:
                counts[k] = 1
                unique.append(c)
            if types and c.name not in types:
                invented.add(c.name)
        spam = (
            {k for k, n in counts.items() if n > self.max_repeats}
            if len(unique) < len(calls)
            else _NO_KEYS
        )

        used: set[int] = set()
        good_keys: set[str] = set()
        positions: list[int] = []
        name_hits = 0
        arg_total = 0.0
        for name, ref_args in ref:
            best, best_frac = -1, -1.0
            for i, c in enumerate(unique):
                if c.name != name or i in used:
                    continue
                frac = _arg_fraction(ref_args, c.args) if ref_args else 1.0
                if frac > best_frac:
                    best, best_frac = i, frac
                if frac == 1.0:
                    break
            if best < 0:
                reasons.append(f"missing call {name}")
                continue
            used.add(best)
            name_hits += 1
            arg_total += best_frac
            if best_frac == 1.0:
                positions.append(best)
                good_keys.add(unique[best].key)
            else:
                reasons.append(f"wrong arguments for {name}")

        n_ref = len(ref)
        n_unique = len(unique)
        correct = len(positions) / n_ref if n_ref else (1.0 if not unique else 0.0)
        if not positions or positions == sorted(positions):  # distinct indices: in order
            in_order = 1.0
        else:
            in_order = _lis(positions) / len(positions)
        n_extra = n_unique - len(used)
        precision = 1.0 - 0.5 * (n_extra / n_unique) if unique else 1.0
        if n_extra:
            extra = {c.name for i, c in enumerate(unique) if i not in used}
            reasons.append("extra calls: " + ", ".join(sorted(extra)))
        if self.ordered and in_order < 1.0:
            reasons.append("calls out of order")
        if invented:
            reasons.append("invented tools: " + ", ".join(sorted(invented)))
        if spam:
            reasons.append("repeated identical calls")

        order_factor = (0.5 + 0.5 * in_order) if self.ordered else 1.0
        score = (
            correct * order_factor * precision * (0.5 if invented else 1.0) * (0.5 if spam else 1.0)
        )
        components = {
            "tool_selection": clamp(name_hits / n_ref) if n_ref else 1.0,
            "arguments": clamp(arg_total / n_ref) if n_ref else 1.0,
            "correct_calls": correct,
            "order": in_order,
            "precision": precision,
            "no_invented": 0.0 if invented else 1.0,
            "no_spam": 0.0 if spam else 1.0,
        }
        turn_scores = _turn_scores(calls, n_turns, good_keys, types)
        return make_result(
            reward=self.name,
            version=self.version,
            score=score,
            threshold=self.threshold,
            components=components,
            reasons=reasons,
            turn_scores=turn_scores,
        )


_ALL_ONES = {
    k: 1.0
    for k in (
        "tool_selection",
        "arguments",
        "correct_calls",
        "order",
        "precision",
        "no_invented",
        "no_spam",
    )
}


def _exact(ref: Ref, calls: list[Call], types: Types) -> bool:
    """The calls are the reference, one for one and in order, each distinct and declared.

    Then the general matching pairs call i with reference i (it takes the first unused call
    of that name with every argument right), and every component and turn score is 1.
    """
    keys: set[str] = set()
    for (name, ref_args), c in zip(ref, calls, strict=True):
        if c.name != name or c.key in keys or (types and name not in types):
            return False
        got = c.args
        for k, v in ref_args.items():  # _arg_fraction(ref_args, got) == 1.0, inline
            if k not in got or got[k] != v:  # builtin values: != is not ==
                return False
        keys.add(c.key)
    return True


_NO_KEYS: frozenset[str] = frozenset()


class _GroupScorer:
    """:meth:`ToolCallingReward.group_scorer`: one group's peers, counted once per schema."""

    __slots__ = ("_calls", "_peer_ids", "_peers", "_reward", "_votes")

    def __init__(self, reward: ToolCallingReward, peers: tuple[Transcript, ...]) -> None:
        self._reward = reward
        self._peers = peers  # held: the id()s below stay unique while this scorer lives
        self._peer_ids = {id(p) for p in peers}
        self._votes: dict[int, tuple[Types, Votes]] = {}
        # values hold the types mapping whose id() is in their key, as _votes does
        self._calls: dict[tuple[int, int], tuple[Types, list[Call], int]] = {}

    def _extract(self, t: Transcript, types: Types) -> tuple[list[Call], int]:
        key = (id(t), id(types))
        hit = self._calls.get(key)
        if hit is None:
            calls, n_turns = extract_with_turns(t, types)
            if id(t) in self._peer_ids:
                self._calls[key] = (types, calls, n_turns)
            return calls, n_turns
        return hit[1], hit[2]

    def __call__(self, t: Transcript, context: RewardContext) -> RewardResult:
        types = schema_types(t.tools)
        ref = _explicit_reference(t, context, types)
        if ref is None:
            entry = self._votes.get(id(types))
            if entry is None or entry[0] is not types:
                votes = Votes(
                    [self._extract(p, types)[0] for p in self._peers],
                    [p.conversation_id for p in self._peers],
                )
                entry = self._votes[id(types)] = (types, votes)
            ref = entry[1].reference(t.conversation_id)
            if ref is None:
                raise MissingContextError(_NO_REFERENCE)
        calls, n_turns = self._extract(t, types)
        return self._reward.score(ref, calls, n_turns, types)


def _explicit_reference(t: Transcript, context: RewardContext, types: Types) -> Ref | None:
    """A reference given by context.reference, context.label or the transcript's label."""
    for source in (context.reference, context.label, t.label):
        ref = _parse_reference(source, types, allow_bare_list=source is context.reference)
        if ref is not None:
            return ref
    return None


def _arg_fraction(ref_args: dict[str, Any], got: dict[str, Any]) -> float:
    if not ref_args:
        return 1.0
    hits = 0
    for k, v in ref_args.items():
        if k in got and got[k] == v:
            hits += 1
    return hits / len(ref_args)


def _lis(xs: list[int]) -> int:
    """Length of the longest increasing subsequence (patience sorting)."""
    tails: list[int] = []
    for x in xs:
        i = bisect_left(tails, x)
        if i == len(tails):
            tails.append(x)
        else:
            tails[i] = x
    return len(tails)


def _turn_scores(
    calls: list[Call], n_turns: int, good: set[str], types: Types
) -> tuple[float, ...]:
    """Each assistant turn: share of its calls that are correct, first-time, declared calls;
    a turn without calls did nothing wrong with tools and scores 1."""
    if not calls:
        return (1.0,) * n_turns
    ok = [0] * n_turns
    made = [0] * n_turns
    seen: set[str] = set()
    for c in calls:
        k = c.key
        made[c.turn] += 1
        if k not in seen:  # a repeat is never a good call
            seen.add(k)
            if k in good and not (types and c.name not in types):
                ok[c.turn] += 1
    return tuple(o / m if m else 1.0 for o, m in zip(ok, made, strict=True))


def _parse_reference(source: Any, types: dict[str, Any], *, allow_bare_list: bool) -> Ref | None:
    """A reference from a list of calls or a mapping holding one under a known key."""
    if source is None or not isinstance(source, dict | list):
        return None
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
