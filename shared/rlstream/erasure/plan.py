"""What an erasure does beyond the rows, decided from what it found (pure, no I/O).

From the erased rollouts and the datasets, runs, models and aliases built from them: which
releases are rewritten or revoked, which run folders lose their copies of training data
(only runs whose outcome is final: an open run still reads them), which champions are
kept (flagged) or rolled back. The report the CLI prints and the record stores are built
from the same objects, so the dry run and the erasure say the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from rlstream.erasure.settings import ChampionPolicy, DatasetPolicy
from rlstream.erasure.topics import TopicOutcome
from rlstream.storage import ErasedRollout

#: run states after which nothing reads the run's folder for training any more
FINAL_RUN_STATES = frozenset({"succeeded", "failed", "over_budget"})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DatasetChange(_Frozen):
    dataset_id: str
    path: str
    action: DatasetPolicy
    #: rewritten | revoked | unchanged | absent (folder not on this machine) | skipped
    outcome: str = "planned"
    rows_removed: dict[str, int] = Field(default_factory=dict)
    revision: int | None = None


class RunChange(_Frozen):
    run_id: str
    path: str | None
    status: str
    #: the run's copies of training data are removed (its outcome is final)
    scrub: bool
    files_removed: int = 0


class ChampionChange(_Frozen):
    agent: str
    model_id: str
    policy: ChampionPolicy
    #: kept (flagged) | rolled back to <model> | kept: no earlier champion untouched
    outcome: str = "planned"


class ErasurePlan(_Frozen):
    datasets: tuple[DatasetChange, ...]
    runs: tuple[RunChange, ...]
    models: tuple[str, ...]
    champions: tuple[ChampionChange, ...]


def plan_effects(
    rollouts: Sequence[ErasedRollout],
    dataset_paths: Sequence[tuple[str, str]],
    runs: Sequence[tuple[str, str | None, str]],
    models: Sequence[str],
    aliases: Sequence[tuple[str, str, str]],
    *,
    datasets: DatasetPolicy,
    champion: ChampionPolicy,
) -> ErasurePlan:
    """The plan for rollouts released in ``dataset_paths`` (id, path), trained on by
    ``runs`` (id, artifact path, status) and ``models``, with ``aliases`` (agent, alias,
    model) naming some of those models."""
    released = {r.released_in for r in rollouts if r.released_in}
    changes = tuple(
        DatasetChange(dataset_id=d, path=p, action=datasets)
        for d, p in sorted(dataset_paths)
        if d in released
    )
    run_changes = tuple(
        RunChange(run_id=r, path=p, status=s, scrub=p is not None and s in FINAL_RUN_STATES)
        for r, p, s in sorted(runs)
    )
    champions = tuple(
        ChampionChange(agent=a, model_id=m, policy=champion)
        for a, alias, m in sorted(aliases)
        if alias == "champion" and m in set(models)
    )
    return ErasurePlan(
        datasets=changes, runs=run_changes, models=tuple(sorted(models)), champions=champions
    )


class ErasureReport(_Frozen):
    """One erasure (or, ``dry_run``, what it would do): counts, what it touched, what is
    left (``pending``: work that could not be done here, finished by ``--resume``)."""

    erasure_id: str | None
    dry_run: bool
    selector: str
    status: str
    counts: dict[str, int]
    plan: ErasurePlan
    topics: TopicOutcome | None = None
    pending: tuple[dict[str, str], ...] = ()
    seconds: float = 0.0
    #: seconds per step (postgres, release locks, redis, lineage, files, champions, topics)
    steps: dict[str, float] = Field(default_factory=dict)

    def lines(self) -> list[str]:
        verb = "would erase" if self.dry_run else "erased"
        c = self.counts
        head = f"{self.erasure_id}: " if self.erasure_id else "dry run: "
        out = [
            f"{head}{verb} {self.selector}: {c.get('transcripts', 0)} conversation(s), "
            f"{c.get('rollouts', 0)} rollout(s) ({c.get('released_rollouts', 0)} released), "
            f"{c.get('turn_buffers', 0)} turn buffer(s), {c.get('lineage_edges', 0)} lineage "
            f"edge(s), {c.get('groups_removed', 0)} group(s) emptied, "
            f"{c.get('heldout_keys_removed', 0)} held-out key(s)"
        ]
        if "redis_keys" in c:
            out.append(
                f"redis: {c['redis_keys']} key(s), {c.get('redis_uncounted', 0)} counted rollout(s)"
            )
        for d in self.plan.datasets:
            rows = sum(d.rows_removed.values())
            rev = f", revision {d.revision}" if d.revision else ""
            out.append(f"dataset {d.dataset_id[:12]} ({d.action}): {d.outcome}, {rows} row(s){rev}")
        for r in self.plan.runs:
            what = f"{r.files_removed} data copy file(s) removed" if r.scrub else "left (open run)"
            out.append(f"run {r.run_id} trained on it ({r.status}): {what}")
        for m in self.plan.models:
            out.append(f"model {m[:12]} trained on it")
        for ch in self.plan.champions:
            out.append(f"champion of {ch.agent}: {ch.model_id[:12]} {ch.outcome}")
        if self.topics is not None:
            if self.topics.skipped:
                out.append(f"topics: not checked ({self.topics.skipped})")
            for t, n in sorted(self.topics.tombstoned.items()):
                out.append(f"topic {t}: {n} tombstone(s)")
            for t, until in sorted(self.topics.retained_until.items()):
                out.append(f"topic {t}: not compacted; its records expire by {until}")
        for p in self.pending:
            out.append(f"pending: {p.get('kind')} {p.get('id', '')}: {p.get('why')}")
        spent = ", ".join(f"{k} {v:.2f}" for k, v in self.steps.items() if v >= 0.005)
        out.append(
            f"status {self.status} in {self.seconds:.2f} s" + (f" ({spent})" if spent else "")
        )
        return out
