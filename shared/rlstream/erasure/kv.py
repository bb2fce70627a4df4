"""Erased conversations out of Redis: idempotency keys, counter markers, group counters and
the near-duplicate index.

Redis holds no content, only ids and counts, but the ids are the erased ones (a stand-in
conversation id is still the user's pseudonym), so every key naming one goes: the seen keys
of ingest (``transcript``), the grader (``scored``) and the rebuild (``conversation``,
``rollout``), each rollout's counter marker, and the conversation's entries in every
near-duplicate scope. A group's counters are decremented once per rollout it had counted
(the marker says so, atomically), and a group left empty goes with its index entry.
"""

from __future__ import annotations

from collections.abc import Sequence

from rlstream.storage import ErasedRollout, GroupKey, RedisState

#: idempotency kinds keyed by conversation id, and by rollout id
CONVERSATION_KINDS = ("transcript", "conversation")
ROLLOUT_KINDS = ("scored", "rollout")

# KEYS: group hash, marker, index set; ARGV: -passed ("-1" or "0"), -score, as text
# (Lua would print -0 as "-0", which HINCRBY refuses). Returns 1 if it was uncounted.
_UNCOUNT = """
if redis.call('DEL', KEYS[2]) == 0 then return 0 end
if redis.call('EXISTS', KEYS[1]) == 0 then return 1 end
local n = redis.call('HINCRBY', KEYS[1], 'n', -1)
redis.call('HINCRBY', KEYS[1], 'passes', ARGV[1])
redis.call('HINCRBYFLOAT', KEYS[1], 'sum_score', ARGV[2])
if n <= 0 then
    redis.call('DEL', KEYS[1])
    redis.call('SREM', KEYS[3], KEYS[1])
end
return 1
"""


async def erase_redis(
    state: RedisState,
    conversation_ids: Sequence[str],
    rollouts: Sequence[ErasedRollout],
    groups_removed: Sequence[tuple[str, str, str]] = (),
    *,
    dry_run: bool = False,
) -> dict[str, int]:
    """Delete (``dry_run``: count) the keys of these conversations and rollouts; per kind."""
    redis = state.redis
    ids = [state.idem_key(k, c) for k in CONVERSATION_KINDS for c in conversation_ids]
    ids += [state.idem_key(k, r.rollout_id) for k in ROLLOUT_KINDS for r in rollouts]
    out: dict[str, int] = {}
    if dry_run:
        out["idempotency_keys"] = int(await redis.exists(*ids)) if ids else 0
        markers = [state._marker_key(r.rollout_id) for r in rollouts]
        out["counted_rollouts"] = int(await redis.exists(*markers)) if markers else 0
        out["neardup_entries"] = await _neardup(state, conversation_ids, dry_run=True)
        return out
    out["idempotency_keys"] = int(await redis.delete(*ids)) if ids else 0
    uncount = redis.register_script(_UNCOUNT)
    counted = 0
    for r in rollouts:
        g = GroupKey(agent=r.agent, reward_spec=r.reward_spec, task_key=r.task_key)
        keys = [
            state._group_key(g),
            state._marker_key(r.rollout_id),
            state._index_key(r.agent, r.reward_spec),
        ]
        minus = ["-1" if r.passed else "0", repr(-r.score) if r.score else "0"]
        counted += int(await uncount(keys=keys, args=minus))
    out["counted_rollouts"] = counted
    # a group Postgres no longer has goes whatever its markers said (they expire)
    gone = [GroupKey(agent=a, reward_spec=s, task_key=k) for a, s, k in groups_removed]
    for g in gone:
        await redis.srem(state._index_key(g.agent, g.reward_spec), state._group_key(g))  # type: ignore[misc]
    out["groups_removed"] = (
        int(await redis.delete(*[state._group_key(g) for g in gone])) if gone else 0
    )
    out["neardup_entries"] = await _neardup(state, conversation_ids, dry_run=False)
    return out


async def _scopes(state: RedisState) -> list[str]:
    """Every near-duplicate scope (a handful: one per agent), from the index's scope set;
    an index older than that set is found once by a scan, which fills it."""
    nd = state.neardup
    found = {_text(m) for m in await state.redis.smembers(nd.scopes_key)}  # type: ignore[misc]
    if not found:  # "" marks the set as complete, so the scan runs once per namespace
        prefix = f"{state.namespace}:nd:"
        async for key in state.redis.scan_iter(match=f"{prefix}*:sig", count=1000):
            found.add(_text(key)[len(prefix) : -len(":sig")])
        await state.redis.sadd(nd.scopes_key, "", *found)  # type: ignore[misc]
    return sorted(found - {""})


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


async def _neardup(state: RedisState, conversation_ids: Sequence[str], *, dry_run: bool) -> int:
    """Remove the conversations from every scope's signature hash and band sets."""
    if not conversation_ids:
        return 0
    removed = 0
    ids = list(conversation_ids)
    for scope in await _scopes(state):
        sig_key = state.neardup.signature_key(scope)
        values = await state.redis.hmget(sig_key, ids)  # type: ignore[misc]
        pipe = state.redis.pipeline(transaction=False)
        for cid, value in zip(ids, values, strict=True):
            if value is None:
                continue
            removed += 1
            hi, lo = (int(x) for x in _text(value).split())
            for band in state.neardup.band_keys(scope, hi << 32 | lo):
                pipe.srem(band, cid)
            pipe.hdel(sig_key, cid)
        if not dry_run:
            await pipe.execute()
    return removed
