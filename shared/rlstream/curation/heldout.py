"""The held-out split: a deterministic share of task keys never reaches a training set.

Per agent a task key is held out when ``sha256(agent|task key)``, read as a number in
[0, 1), falls below the share. The reward spec is not in the hash: a held-out task must never
train any model of its agent, whatever the reward version, so a reward version bump must not
re-draw the split. Raising the share only adds keys, and the same key lands on the same side
on every machine, in the CLI and in the curator. The curator also records held-out keys in
Postgres (``heldout_keys``, per agent), where a trigger refuses to release any of their
rollouts under any spec; the evaluator samples the agent's accumulated held-out prompts and
records a run whose candidate trained on one of them as rejected, with the keys.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable

from rlstream.rollout import ScoredRollout

#: the default share of task keys held out for evaluation (settings: RLSTREAM_HELDOUT_SHARE)
DEFAULT_HELDOUT_SHARE = 0.1
HELDOUT_FILE = "heldout.jsonl"

#: decides whether a rollout's task key is held out
HeldoutRule = Callable[[ScoredRollout], bool]


def heldout_point(agent: str | None, task_key: str) -> float:
    """Where the key falls in [0, 1): the first 8 bytes of sha256(agent|task key)."""
    blob = f"{agent or ''}|{task_key}".encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big") / 2.0**64


def is_heldout(agent: str | None, task_key: str, share: float) -> bool:
    """True when this task key is evaluation-only for this agent (under every reward spec)."""
    return share > 0.0 and heldout_point(agent, task_key) < share


def share_rule(share: float) -> HeldoutRule:
    """The hash rule at ``share`` (what ``rlstream curate`` uses)."""
    return lambda r: is_heldout(r.transcript.agent, r.task_key, share)


def keys_rule(task_keys: Iterable[str]) -> HeldoutRule:
    """Exactly these task keys (the curator's keys as recorded in Postgres)."""
    keys = frozenset(task_keys)
    return lambda r: r.task_key in keys


def split(
    rollouts: Iterable[ScoredRollout], rule: HeldoutRule
) -> tuple[list[ScoredRollout], dict[str, list[ScoredRollout]]]:
    """(training candidates, held-out rollouts by task key).

    A task key is held out as a whole: if the rule holds for any of its rollouts, all of
    them stay out of training.
    """
    items = list(rollouts)
    held = {r.task_key for r in items if rule(r)}
    train = [r for r in items if r.task_key not in held]
    out: dict[str, list[ScoredRollout]] = defaultdict(list)
    for r in items:
        if r.task_key in held:
            out[r.task_key].append(r)
    return train, dict(out)
