"""Grading: apply a RewardSpec to transcripts and produce ScoredRollouts.

``grade_one`` grades a single transcript with the context it is given. ``grade_many`` is the
batch/stream-window form: it groups transcripts by task key and grades in two passes, so
rewards that derive their reference from the group (tool_calling) see the rollouts that
passed everything else. A transcript whose grading fails yields a :class:`GradeFailure`
with the reason; the run goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from rlstream.errors import RlstreamError
from rlstream.fastmodel import trusted
from rlstream.grading.spec import RewardSpec, SpecItem
from rlstream.rewards.base import GroupScorer, RewardContext, RewardResult, group_scorer_factory
from rlstream.rewards.outcome import OutcomeReward
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Transcript

Progress = Callable[[int, int], None]
_EMPTY_CONTEXT = RewardContext()


class GradeFailure(BaseModel):
    """A transcript that could not be graded, and why (dead-letter material)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    conversation_id: str
    task_key: str
    reward: str | None
    code: str
    reason: str
    reward_spec: str
    source: str = "inline"


def _combine(t: Transcript, spec: RewardSpec, results: list[RewardResult]) -> ScoredRollout:
    items = spec.items
    if len(items) == 1 and len(results) == 1:  # one reward: its own verdict, weighted
        r = results[0]
        w = items[0].entry.weight
        score = min(1.0, max(0.0, (0.0 + w * r.score) / (0.0 + w)))
        passed = r.passed
    else:
        total_w = 0.0
        acc = 0.0
        passed = True
        for item, r in zip(items, results, strict=True):
            w = item.entry.weight
            total_w += w
            acc += w * r.score
            if not r.passed:
                passed = False
        score = min(1.0, max(0.0, acc / total_w))
    return trusted(
        ScoredRollout,
        {
            "schema_version": 1,
            "rollout_id": ScoredRollout.make_id(t.conversation_id, spec.spec_id),
            "transcript": t,
            "results": tuple(results),
            "score": score,
            "passed": passed,
            "reward_spec": spec.spec_id,
        },
    )


def grade_one(
    t: Transcript, spec: RewardSpec, context: RewardContext | None = None
) -> ScoredRollout:
    """Grade one transcript. Reward errors (MissingContextError ...) propagate."""
    ctx = context if context is not None else _EMPTY_CONTEXT
    return _combine(t, spec, [item.reward(t, ctx) for item in spec.items])


def _failure(
    t: Transcript, spec: RewardSpec, item: SpecItem | None, exc: Exception
) -> GradeFailure:
    code = exc.code if isinstance(exc, RlstreamError) else "reward_crashed"
    reason = str(exc) if isinstance(exc, RlstreamError) else f"{type(exc).__name__}: {exc}"
    return GradeFailure(
        conversation_id=t.conversation_id,
        task_key=t.group_key,
        reward=item.entry.name if item else None,
        code=code,
        reason=reason,
        reward_spec=spec.spec_id,
        source=t.source.label(),
    )


def grade_many(
    transcripts: Iterable[Transcript],
    spec: RewardSpec,
    on_progress: Progress | None = None,
    *,
    context: RewardContext | None = None,
) -> Iterator[ScoredRollout | GradeFailure]:
    """Grade a batch in input order; group-aware rewards get their group's passing peers.

    Pass 1 runs every reward that does not use the group. Pass 2 gives group-aware rewards
    ``context.group`` = the other rollouts of the same task key that passed pass 1 (when the
    spec has no other reward, those whose logged outcome passes).
    """
    base = context if context is not None else _EMPTY_CONTEXT
    items = list(transcripts)
    total = len(items)
    solo = [i for i in spec.items if not i.uses_group]
    grouped = [i for i in spec.items if i.uses_group]

    partial: list[dict[str, RewardResult] | GradeFailure] = []
    for t in items:
        got: dict[str, RewardResult] = {}
        fail: GradeFailure | None = None
        for item in solo:
            try:
                got[item.entry.name] = item.reward(t, base)
            except Exception as exc:  # one bad rollout must not stop a run
                fail = _failure(t, spec, item, exc)
                break
        partial.append(fail if fail is not None else got)

    keys: list[str] = []
    peers: dict[str, list[Transcript]] = {}
    if grouped:
        keys = [t.group_key for t in items]
        judge = _peer_judge(solo)
        for t, key, res in zip(items, keys, partial, strict=True):
            if not isinstance(res, GradeFailure) and judge(t, res):
                peers.setdefault(key, []).append(t)
    scorers: dict[tuple[str, str], GroupScorer] = {}
    factories = [group_scorer_factory(i.reward) for i in grouped]
    left: dict[str, int] = {}  # rollouts of each group still to grade: a done group's
    for key in keys:  # scorers (and the calls they hold) are dropped
        left[key] = left.get(key, 0) + 1

    for n, (t, res) in enumerate(zip(items, partial, strict=True), start=1):
        if isinstance(res, GradeFailure) or not grouped:
            out: ScoredRollout | GradeFailure = (
                res if isinstance(res, GradeFailure) else _combine_named(t, spec, res)
            )
        else:
            out = _second_pass(t, keys[n - 1], spec, grouped, factories, res, base, peers, scorers)
        if grouped:
            key = keys[n - 1]
            left[key] -= 1
            if not left[key]:
                for item in grouped:
                    scorers.pop((key, item.entry.name), None)
        if on_progress is not None:
            on_progress(n, total)
        yield out


def _combine_named(t: Transcript, spec: RewardSpec, got: dict[str, RewardResult]) -> ScoredRollout:
    return _combine(t, spec, [got[i.entry.name] for i in spec.items])


def _second_pass(
    t: Transcript,
    key: str,
    spec: RewardSpec,
    grouped: list[SpecItem],
    factories: list[Callable[[Sequence[Transcript]], GroupScorer] | None],
    got: dict[str, RewardResult],
    base: RewardContext,
    peers: dict[str, list[Transcript]],
    scorers: dict[tuple[str, str], GroupScorer],
) -> ScoredRollout | GradeFailure:
    """Group-aware rewards with the group's passing peers. A reward offering
    ``group_scorer(peers)`` gets one scorer per group (it leaves each rollout out itself, in
    O(group) for the whole group); any other gets ``context.group`` = the other peers."""
    done = dict(got)
    ctx: RewardContext | None = None
    for item, factory in zip(grouped, factories, strict=True):
        name = item.entry.name
        try:
            if factory is not None:
                scorer = scorers.get((key, name))
                if scorer is None:
                    scorer = scorers[(key, name)] = factory(tuple(peers.get(key, ())))
                done[name] = scorer(t, base)
                continue
            if ctx is None:
                cid = t.conversation_id
                group = tuple(p for p in peers.get(key, ()) if p.conversation_id != cid)
                ctx = RewardContext.model_construct(
                    label=base.label, reference=base.reference, group=group, options=base.options
                )
            done[name] = item.reward(t, ctx)
        except Exception as exc:
            return _failure(t, spec, item, exc)
    return _combine_named(t, spec, done)


def _peer_judge(solo: list[SpecItem]) -> Callable[[Transcript, dict[str, RewardResult]], bool]:
    """Who counts as a passing peer: passed every pass-1 reward, or (no such reward) the
    logged outcome passes."""
    if solo:
        return lambda _t, res: all(r.passed for r in res.values())
    outcome = OutcomeReward()
    empty = RewardContext()

    def by_outcome(t: Transcript, _res: dict[str, Any]) -> bool:
        try:
            return outcome.passes(t, empty)
        except RlstreamError:
            return False

    return by_outcome
