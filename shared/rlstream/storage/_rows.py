"""Row conversion between the pydantic models and the SQL columns (shared by mixins)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import asyncpg

from rlstream.rewards.base import RewardResult
from rlstream.rollout import ScoredRollout
from rlstream.storage._base import dumps
from rlstream.storage.errors import UnredactedTranscriptError
from rlstream.storage.records import GroupKey, GroupStats
from rlstream.transcript import Transcript

_T = TypeVar("_T")

INSERT_TRANSCRIPTS = """
INSERT INTO transcripts (conversation_id, task_key, agent, redacted, source_kind,
    source_topic, source_partition, source_offset, source_file, source_line, body)
SELECT t.c, t.k, t.a, t.r, t.sk, t.st, t.sp, t.so, t.sf, t.sl, t.b::jsonb
FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[], $5::text[], $6::text[],
            $7::int[], $8::bigint[], $9::text[], $10::int[], $11::text[])
     AS t(c, k, a, r, sk, st, sp, so, sf, sl, b)
ON CONFLICT (conversation_id) DO NOTHING
RETURNING conversation_id
"""

INSERT_ROLLOUTS = """
INSERT INTO rollouts (rollout_id, conversation_id, task_key, agent, reward_spec, score,
    passed, results, features)
SELECT t.i, t.c, t.k, t.a, t.s, t.sc, t.p, t.r::jsonb, t.f::jsonb
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::float8[],
            $7::bool[], $8::text[], $9::text[]) AS t(i, c, k, a, s, sc, p, r, f)
ON CONFLICT (rollout_id) DO NOTHING
RETURNING rollout_id
"""

BUMP_GROUPS = """
INSERT INTO groups (agent, reward_spec, task_key, n, passes, sum_score)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::float8[])
ON CONFLICT (agent, reward_spec, task_key) DO UPDATE SET
    n = groups.n + excluded.n,
    passes = groups.passes + excluded.passes,
    sum_score = groups.sum_score + excluded.sum_score,
    updated_at = now()
"""

ROLLOUT_COLUMNS = "r.rollout_id, r.reward_spec, r.score, r.passed, r.results, t.body AS transcript"


def check_redacted(transcripts: Iterable[Transcript], allow_unredacted: bool) -> None:
    if allow_unredacted:
        return
    bad = [t.conversation_id for t in transcripts if not t.redacted]
    if bad:
        raise UnredactedTranscriptError(
            f"{len(bad)} transcript(s) not redacted, refusing to store: {bad[:5]}"
        )


def transcript_columns(transcripts: Sequence[Transcript]) -> list[list[Any]]:
    cols: list[list[Any]] = [[] for _ in range(11)]
    for t in transcripts:
        s = t.source
        row = (
            t.conversation_id, t.task_key, t.agent, t.redacted, s.kind, s.topic,
            s.partition, s.offset, s.file, s.line, t.model_dump_json(),
        )  # fmt: skip
        for col, value in zip(cols, row, strict=True):
            col.append(value)
    return cols


def rollout_columns(rollouts: Sequence[ScoredRollout]) -> list[list[Any]]:
    cols: list[list[Any]] = [[] for _ in range(9)]
    for r in rollouts:
        g = rollout_group(r)
        results = [res.model_dump(mode="json") for res in r.results]
        row = (
            r.rollout_id, r.conversation_id, g.task_key, g.agent, g.reward_spec,
            r.score, r.passed, dumps(results), dumps(rollout_features(r)),
        )  # fmt: skip
        for col, value in zip(cols, row, strict=True):
            col.append(value)
    return cols


def rollout_features(rollout: ScoredRollout) -> dict[str, float]:
    """Every reward's surface features in one flat dict (later rewards win a name clash)."""
    merged: dict[str, float] = {}
    for result in rollout.results:
        merged.update(result.features)
    return merged


def rollout_group(rollout: ScoredRollout) -> GroupKey:
    return GroupKey(
        agent=rollout.transcript.agent or "",
        reward_spec=rollout.reward_spec,
        task_key=rollout.task_key,
    )


def row_to_rollout(row: asyncpg.Record) -> ScoredRollout:
    return ScoredRollout(
        rollout_id=row["rollout_id"],
        transcript=Transcript.model_validate(row["transcript"]),
        results=tuple(RewardResult.model_validate(r) for r in row["results"]),
        score=row["score"],
        passed=row["passed"],
        reward_spec=row["reward_spec"],
    )


def unique_by(items: Iterable[_T], key: Callable[[_T], str]) -> list[_T]:
    seen: dict[str, _T] = {}
    for item in items:
        seen.setdefault(key(item), item)
    return [seen[k] for k in sorted(seen)]


def row_to_group(row: asyncpg.Record) -> GroupStats:
    return GroupStats(
        key=GroupKey(agent=row["agent"], reward_spec=row["reward_spec"], task_key=row["task_key"]),
        n=row["n"],
        passes=row["passes"],
        sum_score=float(row["sum_score"] or 0.0),
    )
