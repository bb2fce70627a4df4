"""curate(): graded rollouts in, kept groups + drop counts + before/after profiles out.

Order of operations (each step sees only what the previous kept):
redelivered copies -> held-out task keys set aside -> truncated -> exact duplicates /
conflicting rewards -> near duplicates -> [profile "before" + hack scan] -> group size -> dead -> band -> [profile
"after"]. Everything is processed in (task_key, rollout_id) order, so any permutation of
the input gives the same result.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from rlstream.curation.dedupe import Content, content, near_duplicates, shingles, signature_of
from rlstream.curation.heldout import HeldoutRule, share_rule, split
from rlstream.curation.options import CurateOptions
from rlstream.errors import RlstreamError
from rlstream.metrics import Method, Profile, ProfileAccumulator, RolloutRow, endorsed_features
from rlstream.metrics.features import fingerprint64, surface_features, truncation_reason
from rlstream.rollout import ScoredRollout

#: every reason a rollout can be dropped for, in pipeline order (all reported, zeros too)
ROLLOUT_DROP_REASONS = (
    "redelivered",
    "truncated_length",
    "truncated_errored",
    "no_assistant_turn",
    "conflicting_rewards",
    "exact_duplicate",
    "near_duplicate",
    "too_small",
    "dead_all_pass",
    "dead_all_fail",
    "out_of_band",
)
GROUP_DROP_REASONS = ("too_small", "dead_all_pass", "dead_all_fail", "out_of_band")


class DatasetRejectedError(RlstreamError):
    """Curation refused to release a dataset (the hack scan raised an alarm under "reject")."""

    code = "dataset_rejected"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KeptGroup(_Frozen):
    """A group that survived curation; rollouts sorted by rollout id."""

    task_key: str
    rollouts: tuple[ScoredRollout, ...]

    @property
    def n(self) -> int:
        return len(self.rollouts)

    @property
    def passes(self) -> int:
        return sum(1 for r in self.rollouts if r.passed)

    @property
    def pass_rate(self) -> float:
        return self.passes / self.n


class Conflict(_Frozen):
    """Identical rollouts (same fingerprint) that got different rewards: judge noise."""

    task_key: str
    fingerprint: str
    rollout_ids: tuple[str, ...]
    scores: tuple[float, ...]
    passed: tuple[bool, ...]


class CurationResult(_Frozen):
    """What curation kept and why the rest went.

    ``profile_before`` describes the clean set (after redelivery, truncation and duplicate
    drops, before the size/dead/band filters): it carries the hack scan and decides the
    method. ``profile_after`` describes the kept groups only.
    """

    options: CurateOptions
    input_rollouts: int
    kept: tuple[KeptGroup, ...]
    #: clean (deduped, complete) passing rollouts of every group: the SFT source
    sft_pool: tuple[ScoredRollout, ...]
    dropped_rollouts: dict[str, int]
    dropped_groups: dict[str, int]
    conflicting_rewards: tuple[Conflict, ...]
    profile_before: Profile
    profile_after: Profile
    method: Method
    method_reason: str
    #: what the hack scan treated as endorsed (options + the rewards' declarations)
    endorsed: tuple[str, ...] = ()
    #: task keys kept out of training for evaluation, with all their rollouts
    heldout: tuple[KeptGroup, ...] = ()
    rejected: bool = False
    rejection_reason: str | None = None

    @property
    def kept_rollouts(self) -> int:
        return sum(g.n for g in self.kept)

    @property
    def mixed_policy_groups(self) -> int:
        """Kept groups whose rollouts come from more than one policy (model / agent
        version). Curation pools a task's rollouts across policies (DPO pairs and GRPO
        prompts need no single policy), but then a group's pass rate, and so the band
        filter, describes the mix, not the deployed policy: the CLI and manifest say so."""
        return sum(
            1
            for g in self.kept
            if len({p for r in g.rollouts if (p := r.transcript.policy) is not None}) > 1
        )


def _row(s: ScoredRollout, fingerprint: str) -> RolloutRow:
    feats = surface_features(s.transcript)
    for result in s.results:
        feats.update(result.features)
    return RolloutRow(
        s.rollout_id, s.task_key, s.score, s.passed, feats, fingerprint64(fingerprint)
    )


def _unique_ids(rollouts: Iterable[ScoredRollout], drops: Counter[str]) -> list[ScoredRollout]:
    """One copy per rollout id (at-least-once delivery); ties broken by content hash."""
    by_id: dict[str, list[ScoredRollout]] = defaultdict(list)
    for r in rollouts:
        by_id[r.rollout_id].append(r)
    out = []
    for copies in by_id.values():
        if len(copies) > 1:
            drops["redelivered"] += len(copies) - 1
            copies.sort(key=lambda r: hashlib.sha256(r.model_dump_json().encode()).hexdigest())
        out.append(copies[0])
    out.sort(key=lambda r: (r.task_key, r.rollout_id))
    return out


def _drop_conflicts(
    group: list[ScoredRollout],
    contents: list[Content],
    opts: CurateOptions,
    drops: Counter[str],
    conflicts: list[Conflict],
) -> list[int]:
    """Truly identical rollouts (ids and numbers unmasked) with different rewards: noise.

    Masked-equal rollouts may differ in exactly what the reward checks (a final number),
    so only raw identity counts as a conflict. Raw identity implies masked identity, so
    only rollouts that share a masked fingerprint are compared raw. Returns the indices
    that stay.
    """
    repeated = Counter(c.fingerprint for c in contents)
    keep: list[int] = []
    clusters: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(contents):
        if repeated[c.fingerprint] > 1:
            clusters[c.raw_fingerprint()].append(i)
        else:
            keep.append(i)
    for fp, idx in clusters.items():
        members = [group[i] for i in idx]
        if len(idx) > 1 and len({(m.score, m.passed) for m in members}) > 1:
            conflicts.append(
                Conflict(
                    task_key=members[0].task_key,
                    fingerprint=fp,
                    rollout_ids=tuple(m.rollout_id for m in members),
                    scores=tuple(m.score for m in members),
                    passed=tuple(m.passed for m in members),
                )
            )
            if opts.drop_conflicting:
                drops["conflicting_rewards"] += len(idx)
            else:  # keep one, so no pair can have identical chosen and rejected
                drops["exact_duplicate"] += len(idx) - 1
                keep.append(idx[0])
            continue
        keep.extend(idx)
    return sorted(keep)


def _dedupe_group(
    group: list[ScoredRollout], opts: CurateOptions, drops: Counter[str], conflicts: list[Conflict]
) -> list[tuple[ScoredRollout, str]]:
    """Conflicts, exact then near duplicates inside one group; returns (rollout, fingerprint).

    Exact duplicates share the masked fingerprint *and* the outcome; the first (by rollout
    id) is kept.
    """
    contents = [content(r.transcript) for r in group]
    survivors: list[tuple[ScoredRollout, Content]] = []
    seen: set[tuple[str, bool]] = set()
    for i in _drop_conflicts(group, contents, opts, drops, conflicts):
        r, c = group[i], contents[i]
        if opts.dedupe_exact and (c.fingerprint, r.passed) in seen:
            drops["exact_duplicate"] += 1
            continue
        seen.add((c.fingerprint, r.passed))
        survivors.append((r, c))
    if opts.near_dup_threshold is None or len(survivors) < 2:
        return [(r, c.fingerprint) for r, c in survivors]
    size, perms = opts.shingle_size, opts.minhash_permutations
    sigs = [signature_of(shingles(c.tokens(), size), perms) for _, c in survivors]
    matches = near_duplicates(sigs, [r.passed for r, _ in survivors], opts.near_dup_threshold)
    drops["near_duplicate"] += sum(1 for m in matches if m is not None)
    return [(r, c.fingerprint) for (r, c), m in zip(survivors, matches, strict=True) if m is None]


def _group_reason(n: int, c: int, opts: CurateOptions) -> str | None:
    if n < opts.min_group_size:
        return "too_small"
    if opts.drop_dead and c == n:
        return "dead_all_pass"
    if opts.drop_dead and c == 0:
        return "dead_all_fail"
    lo, hi = opts.band
    return None if lo <= c / n <= hi else "out_of_band"


def curate(
    rollouts: Iterable[ScoredRollout],
    options: CurateOptions | None = None,
    *,
    heldout: HeldoutRule | None = None,
) -> CurationResult:
    """Filter graded rollouts into training-worthy groups (see module doc for the order).

    ``heldout`` decides which task keys stay out of training (default: the hash rule at
    ``options.heldout_share``; the curator passes the keys Postgres recorded).
    """
    opts = options or CurateOptions()
    items = list(rollouts)
    drops: Counter[str] = Counter()
    group_drops: Counter[str] = Counter()
    conflicts: list[Conflict] = []
    groups: dict[str, list[ScoredRollout]] = defaultdict(list)
    train, held = split(_unique_ids(items, drops), heldout or share_rule(opts.heldout_share))
    for r in train:
        reason = truncation_reason(r.transcript) if opts.drop_truncated else None
        if reason is not None:
            drops["no_assistant_turn" if reason == "no_assistant" else f"truncated_{reason}"] += 1
            continue
        groups[r.task_key].append(r)
    scan = opts.hack_scan != "off"
    endorsed = tuple(opts.endorsed)
    if opts.endorse_from_rewards:
        names = {res.reward for r in items for res in r.results}
        endorsed = tuple(sorted({*endorsed, *endorsed_features(names)}))
    before = ProfileAccumulator(keep_features=scan)
    clean: dict[str, list[tuple[ScoredRollout, RolloutRow]]] = {}
    for key in sorted(groups):
        survivors = [
            (r, _row(r, fp)) for r, fp in _dedupe_group(groups[key], opts, drops, conflicts)
        ]
        for _, row in survivors:
            before.add(row)
        if survivors:
            clean[key] = survivors
    kept: list[KeptGroup] = []
    after = ProfileAccumulator(keep_features=scan)
    for key, members in clean.items():
        c = sum(1 for r, _ in members if r.passed)
        reason = _group_reason(len(members), c, opts)
        if reason is not None:
            group_drops[reason] += 1
            drops[reason] += len(members)
            continue
        kept.append(KeptGroup(task_key=key, rollouts=tuple(r for r, _ in members)))
        for _, row in members:
            after.add(row)
    p_before = before.profile(k_max=opts.k_max, hack_scan=scan, endorsed=endorsed, seed=opts.seed)
    p_after = after.profile(k_max=opts.k_max, hack_scan=scan, endorsed=endorsed, seed=opts.seed)
    rejected, why = False, None
    if opts.hack_scan == "reject" and p_before.hack_scan is not None and p_before.hack_scan.alarm:
        rejected, why = True, "hack scan alarm: " + "; ".join(p_before.hack_scan.alarms)
    return CurationResult(
        options=opts,
        input_rollouts=len(items),
        kept=tuple(kept),
        sft_pool=tuple(r for members in clean.values() for r, _ in members if r.passed),
        dropped_rollouts={k: drops[k] for k in ROLLOUT_DROP_REASONS},
        dropped_groups={k: group_drops[k] for k in GROUP_DROP_REASONS},
        conflicting_rewards=tuple(conflicts),
        profile_before=p_before,
        profile_after=p_after,
        method=p_before.method,
        method_reason=p_before.method_reason,
        endorsed=endorsed,
        heldout=tuple(
            KeptGroup(task_key=k, rollouts=tuple(sorted(v, key=lambda r: r.rollout_id)))
            for k, v in sorted(held.items())
        ),
        rejected=rejected,
        rejection_reason=why,
    )
