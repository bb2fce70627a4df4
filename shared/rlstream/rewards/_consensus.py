"""The reference a group of passing peers agrees on, with leave-one-out in O(distinct values).

grade_many gives every rollout of a group the *other* passing peers as its reference. Done
naively that is one consensus over ~g peers per rollout: O(g^2) per group. :class:`Votes`
counts the whole group once; a rollout's consensus subtracts its own peers (those sharing its
conversation id) from the counts, so each rollout costs the number of distinct name
sequences and argument values, whatever the group size.

The rule (same as :func:`consensus`): the most common name sequence wins (ties: the
lexicographically smallest); for each call an argument is kept when a strict majority of
those peers give it the same value (ties between values: the smallest JSON encoding) and it
is not free text (prose differs between equally good rollouts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from rlstream.rewards.toolcalls import Call, is_free_text

Ref = list[tuple[str, dict[str, Any]]]
Names = tuple[str, ...]
#: per call position: argument -> {JSON encoding of a value: number of peers giving it}
PosVotes = list[dict[str, dict[str, int]]]


class Votes:
    """Vote counts of a peer group; :meth:`reference` is the consensus without some peers."""

    __slots__ = (
        "_by_cid",
        "_done",
        "_full",
        "_members",
        "_names_of",
        "_pos_args",
        "_sig",
        "_tallies",
        "_values",
    )

    def __init__(self, peer_calls: Sequence[list[Call]], cids: Sequence[str] = ()) -> None:
        self._names_of: list[Names] = []
        #: per peer, per position: [(argument, encoding)]
        self._pos_args: list[list[list[tuple[str, str]]]] = []
        self._members: dict[Names, list[int]] = {}
        self._values: dict[str, Any] = {}
        self._tallies: dict[Names, PosVotes] = {}
        self._full: Ref | None = None
        #: per peer, an id of its (names, arguments) signature: peers with equal signatures
        #: contribute equal votes, so leaving either out gives the same consensus
        self._sig: list[int] = []
        sigs: dict[tuple[Names, tuple[tuple[tuple[str, str], ...], ...]], int] = {}
        self._done: dict[tuple[int, ...], Ref] = {}
        for i, calls in enumerate(peer_calls):
            uniq: dict[str, Call] = {}
            for c in calls:  # first occurrence fixes the order, the last one is kept
                uniq[c.key] = c
            chosen = list(uniq.values())
            names = tuple(c.name for c in chosen)
            self._names_of.append(names)
            self._members.setdefault(names, []).append(i)
            per_pos: list[list[tuple[str, str]]] = []
            for c in chosen:
                pairs = []
                for k, v in c.args.items():
                    enc = orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode()
                    self._values[enc] = v
                    pairs.append((k, enc))
                per_pos.append(pairs)
            self._pos_args.append(per_pos)
            sig = (names, tuple(tuple(p) for p in per_pos))
            self._sig.append(sigs.setdefault(sig, len(sigs)))
        self._by_cid: dict[str, list[int]] = {}
        for i, cid in enumerate(cids):
            self._by_cid.setdefault(cid, []).append(i)

    def __len__(self) -> int:
        return len(self._names_of)

    def reference(self, exclude: str | None = None) -> Ref | None:
        """The consensus of every peer whose conversation id is not ``exclude``; None when no
        peer is left."""
        out = self._by_cid.get(exclude) if exclude is not None else None
        if not out:
            if self._full is None and self._names_of:
                self._full = self._consensus(())
            return self._full
        if len(out) == len(self._names_of):
            return None
        key = tuple(sorted(self._sig[i] for i in out))
        ref = self._done.get(key)
        if ref is None:
            ref = self._done[key] = self._consensus(out)
        return ref

    def _consensus(self, out: Sequence[int]) -> Ref:
        left: dict[Names, int] = {n: len(m) for n, m in self._members.items()}
        for i in out:
            left[self._names_of[i]] -= 1
        names, n_members = min(
            ((n, c) for n, c in left.items() if c > 0), key=lambda nc: (-nc[1], nc[0])
        )
        tally = self._tally(names)
        if any(self._names_of[i] == names for i in out):
            tally = [{k: dict(encs) for k, encs in pos.items()} for pos in tally]
            for i in out:
                if self._names_of[i] == names:
                    for pos, pairs in enumerate(self._pos_args[i]):
                        for k, enc in pairs:
                            tally[pos][k][enc] -= 1
        ref: Ref = []
        for name, pos_votes in zip(names, tally, strict=True):
            args: dict[str, Any] = {}
            for k, encs in pos_votes.items():
                if len(encs) == 1:  # unanimous (the usual case): nothing to rank
                    ((enc, n),) = encs.items()
                else:
                    enc, n = min(encs.items(), key=_rank)
                if n * 2 > n_members and not is_free_text(self._values[enc]):
                    args[k] = self._values[enc]
            ref.append((name, args))
        return ref

    def _tally(self, names: Names) -> PosVotes:
        hit = self._tallies.get(names)
        if hit is None:
            hit = [{} for _ in names]
            for i in self._members[names]:
                for pos, pairs in enumerate(self._pos_args[i]):
                    for k, enc in pairs:
                        encs = hit[pos].setdefault(k, {})
                        encs[enc] = encs.get(enc, 0) + 1
            self._tallies[names] = hit
        return hit


def _rank(kv: tuple[str, int]) -> tuple[int, str]:
    """Most votes first, then the smallest encoding."""
    return -kv[1], kv[0]


def consensus(peer_calls: Sequence[list[Call]]) -> Ref:
    """The calls the passing peers agree on (see the module docstring for the rule)."""
    ref = Votes(peer_calls).reference()
    return ref if ref is not None else []
