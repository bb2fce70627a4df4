"""The batch pipeline as a library: logs -> ingest -> grade -> profile -> curate, on files.

``rlstream ingest|grade|profile|curate`` each run one stage function here; ``rlstream improve
run`` and ``rlstream demo --quick`` run :func:`run_batch`. The CLI only parses options and
draws: progress through :class:`~rlstream.pipeline.stages.Stages`, stage summaries through
:class:`BatchReport`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

import orjson

from rlstream.curation import CurateOptions, CurationResult, Manifest, curate, write_dataset
from rlstream.curation.turn_refs import with_turn_scores
from rlstream.errors import ConfigError
from rlstream.grading import GradeFailure, SpecResolver, grade_many
from rlstream.ingest import IngestOptions, IngestSummary, Reject, ingest_paths
from rlstream.jsonl import read_scored, read_transcripts, write_models
from rlstream.metrics import Profile, ProfileAccumulator, RolloutRow, endorsed_features
from rlstream.metrics.plot import profile_svg
from rlstream.pipeline.stages import NullStages, Stages
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Transcript

_QUIET = NullStages()


def ingest_file(
    inputs: list[Path], out: Path, rejects: Path, options: IngestOptions, stages: Stages = _QUIET
) -> IngestSummary:
    """Stream inputs to ``out`` (transcripts) and ``rejects``; returns the summary."""
    missing = [str(p) for p in inputs if not p.exists()]
    if missing:
        raise ConfigError(f"input not found: {', '.join(missing)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    bad: list[Reject] = []
    run = ingest_paths(inputs, options)
    stages.start("ingesting (bytes)", run.summary.bytes_total or None)
    with out.open("w") as fh:
        last = 0
        for item in run:
            if isinstance(item, Reject):
                bad.append(item)
            else:
                fh.write(item.model_dump_json())
                fh.write("\n")
            now = run.summary.bytes_read
            if now > last:
                stages.advance(now - last)
                last = now
    stages.done("ingesting (bytes)", 0.0, "")
    write_models(rejects, bad)
    if run.summary.read == 0 and not bad:
        names = ", ".join(str(p) for p in inputs)
        raise ConfigError(f"the input is empty: no records in {names}")
    return run.summary


def grade_transcripts(
    transcripts: Iterable[Transcript], specs: SpecResolver, stages: Stages = _QUIET
) -> Iterator[ScoredRollout | GradeFailure]:
    """Grade each agent's transcripts with its spec (group-aware rewards see their peers)."""
    by_agent: dict[str | None, list[Transcript]] = {}
    for t in transcripts:
        by_agent.setdefault(specs.key(t.agent), []).append(t)
    stages.start("grading")
    for agent, items in by_agent.items():
        for result in grade_many(items, specs.for_agent(agent)):
            stages.advance(1)
            yield result
    stages.done("grading", 0.0, "")


def grade_file(
    src: Path, out: Path, failures: Path, specs: SpecResolver, stages: Stages = _QUIET
) -> Counter[str]:
    """Grade a transcripts file; counts of graded, passed, failed and ``failed:<code>``."""
    scored: list[ScoredRollout] = []
    failed: list[GradeFailure] = []
    for r in grade_transcripts(read_transcripts(src), specs, stages):
        if isinstance(r, GradeFailure):
            failed.append(r)
        else:
            scored.append(r)
    write_models(out, with_turn_scores(scored))
    write_models(failures, failed)
    counts: Counter[str] = Counter(
        graded=len(scored), passed=sum(s.passed for s in scored), failed=len(failed)
    )
    counts.update(f"failed:{f.code}" for f in failed)
    return counts


def profile_file(
    src: Path,
    *,
    k_max: int | None = None,
    endorsed: tuple[str, ...] = (),
    stages: Stages = _QUIET,
) -> Profile:
    """Profile a scored file. Like curation, the hack scan treats the features the file's
    rewards declare (gsm8k: numbers) as endorsed, so the two never disagree on an alarm."""
    acc = ProfileAccumulator()
    rewards: set[str] = set()
    stages.start("profiling")
    for s in read_scored(src):
        stages.advance(1)
        rewards.update(r.reward for r in s.results)
        acc.add(RolloutRow.from_scored(s))
    stages.done("profiling", 0.0, "")
    endorsed = tuple(sorted({*endorsed, *endorsed_features(rewards)}))
    return acc.profile(k_max=k_max, endorsed=endorsed)


def curate_file(
    src: Path, dest: Path, options: CurateOptions, stages: Stages = _QUIET
) -> tuple[CurationResult, Manifest]:
    """Curate a scored file into ``dest`` (manifest, grpo/dpo/sft/heldout, next_steps)."""
    stages.start("reading graded rollouts")
    rollouts = []
    for s in read_scored(src):
        rollouts.append(s)
        stages.advance(1)
    stages.done("reading graded rollouts", 0.0, "")
    result = curate(rollouts, options)
    return result, write_dataset(result, dest)


def write_ingest_json(output: Path, summaries: list[IngestSummary]) -> None:
    """ingest.json: each batch's summary as the CLI printed it (the HTML report reads it)."""
    (output / "ingest.json").write_bytes(
        orjson.dumps([s.model_dump(mode="json") for s in summaries], option=orjson.OPT_INDENT_2)
    )


class BatchReport(Stages, Protocol):
    """What :func:`run_batch` tells its caller after each stage (the CLI prints it)."""

    def ingested(self, summary: IngestSummary, transcripts: Path, rejects: Path) -> None: ...

    def graded(self, counts: Counter[str]) -> None: ...

    def profiled(self, profile: Profile) -> None: ...

    def curated(self, result: CurationResult, manifest: Manifest, dest: Path) -> None: ...


class NullReport(NullStages):
    def ingested(self, summary: IngestSummary, transcripts: Path, rejects: Path) -> None:
        pass

    def graded(self, counts: Counter[str]) -> None:
        pass

    def profiled(self, profile: Profile) -> None:
        pass

    def curated(self, result: CurationResult, manifest: Manifest, dest: Path) -> None:
        pass


def run_batch(
    batches: list[tuple[list[Path], IngestOptions]],
    specs: SpecResolver,
    output: Path,
    curate_options: CurateOptions,
    report: BatchReport | None = None,
) -> Profile:
    """Ingest -> grade -> profile -> curate into ``output``.

    Each batch is (files, how to read them); all land in one ``transcripts.jsonl``. Also
    writes ingest.json, rejects.jsonl, scored.jsonl (+ scored.failures.jsonl), profile.json,
    profile.svg and dataset/.
    """
    rep: BatchReport = report or NullReport()
    output.mkdir(parents=True, exist_ok=True)
    transcripts, rejects = output / "transcripts.jsonl", output / "rejects.jsonl"
    summaries: list[IngestSummary] = []
    if len(batches) == 1:
        files, options = batches[0]
        summaries.append(ingest_file(files, transcripts, rejects, options, rep))
        rep.ingested(summaries[0], transcripts, rejects)
    else:
        with transcripts.open("wb") as t_out, rejects.open("wb") as r_out:
            for i, (files, options) in enumerate(batches):
                part_t, part_r = output / f".part{i}.jsonl", output / f".part{i}.rejects.jsonl"
                summary = ingest_file(files, part_t, part_r, options, rep)
                summaries.append(summary)
                rep.ingested(summary, transcripts, rejects)
                for part, sink in ((part_t, t_out), (part_r, r_out)):
                    sink.write(part.read_bytes())
                    part.unlink()
    write_ingest_json(output, summaries)
    scored = output / "scored.jsonl"
    rep.graded(grade_file(transcripts, scored, output / "scored.failures.jsonl", specs, rep))
    profile = profile_file(scored, stages=rep)
    (output / "profile.json").write_bytes(
        orjson.dumps(profile.to_json_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    )
    rep.profiled(profile)
    (output / "profile.svg").write_text(profile_svg(profile, curate_options.band))
    result, manifest = curate_file(scored, output / "dataset", curate_options, rep)
    rep.curated(result, manifest, output / "dataset")
    return profile
