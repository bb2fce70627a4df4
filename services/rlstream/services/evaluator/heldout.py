"""The prompts a run is evaluated on, and the run's rejection when it trained on one.

The services evaluate every run of an agent on the agent's accumulated held-out set
(:mod:`rlstream.evaluation.heldout_set`): the held-out prompts of all its releases, not only
the few its own release held out, so the gate's minimum is reached in normal operation. A
prompt whose task key the candidate trained on (its dataset's lineage, or any release of the
agent under any reward spec, as Postgres says) is not a measurement: the run is recorded as
rejected with the keys listed, never dead-lettered as a handler error.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rlstream.evaluation import HeldoutLeakError, training_task_keys
from rlstream.evaluation.heldout_set import accumulate, write_rows
from rlstream.registry import Verdict

#: how many leaked keys a reason lists (all of them are in the report)
_LISTED = 10


async def accumulated_heldout(
    store: Any, agent: str, out: Path, cap: int | None
) -> tuple[Path | None, list[str]]:
    """Write the agent's accumulated held-out prompts to ``out``; (path or None when there
    are none, their task keys)."""
    sources = [(ds, Path(p) / "heldout.jsonl") for ds, p in await store.dataset_paths(agent)]
    recorded: set[str] = await store.heldout_keys(agent)
    keep = recorded or None  # a store that never recorded keys: the files are the record
    rows = await asyncio.to_thread(accumulate, sources, keep, cap)
    if not rows:
        return None, []
    await asyncio.to_thread(write_rows, rows, out)
    return out, [str(r["task_key"]) for r in rows]


async def trained_keys(store: Any, agent: str, keys: list[str], dataset: Path | None) -> set[str]:
    """Of ``keys``, those some release of the agent trained on, or in the run's dataset."""
    found: set[str] = set(await store.released_task_keys(agent or None, keys))
    if dataset is not None and (dataset / "manifest.json").is_file():
        lineage = await asyncio.to_thread(training_task_keys, dataset)
        found |= set(keys) & lineage
    return found


def leak_verdict(leaked: list[str] | tuple[str, ...]) -> Verdict:
    """The recorded rejection of a run whose candidate trained on held-out prompts."""
    keys = sorted(leaked)
    more = f" (+{len(keys) - _LISTED} more)" if len(keys) > _LISTED else ""
    return Verdict(
        decision="reject",
        reasons=(
            f"held-out leak: the candidate trained on {len(keys)} held-out task key(s), "
            f"so they cannot measure it: {', '.join(keys[:_LISTED])}{more}",
        ),
        report={"status": "failed", "stage": "heldout_leak", "leaked_task_keys": list(keys)},
    )


def leak_from_error(exc: HeldoutLeakError) -> Verdict:
    """A leak the evaluation itself found (a plug-in evaluation, or a lineage read late)."""
    return Verdict(
        decision="reject",
        reasons=(f"held-out leak: {str(exc)[:500]}",),
        report={"status": "failed", "stage": "heldout_leak", "error": str(exc)[:2000]},
    )


def no_heldout_verdict(agent: str) -> Verdict:
    """No held-out prompt exists for the agent yet (every release so far held none out):
    below any minimum, so ``insufficient``, recorded; the next release's keys count."""
    return Verdict(
        decision="insufficient",
        reasons=(
            f"no held-out prompts for agent {agent!r} yet: none of its releases held a task "
            "key out, so nothing can measure the candidate",
        ),
        report={"status": "failed", "stage": "heldout", "error": "no held-out prompts"},
    )
