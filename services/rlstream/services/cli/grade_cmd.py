"""``rlstream grade``: apply rewards to ingested transcripts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import typer

from rlstream.errors import ConfigError
from rlstream.grading import GradeFailure, RewardSpec, grade_many
from rlstream.jsonl import read_transcripts, write_models
from rlstream.rewards.config import RewardConfig, load_reward_config
from rlstream.rewards.registry import available_rewards
from rlstream.rollout import ScoredRollout
from rlstream.services.cli.common import (
    console,
    friendly_errors,
    progress,
    require_files,
    require_nonempty,
)
from rlstream.transcript import Transcript

EXAMPLES = """

[bold]Examples[/]

rlstream grade --in transcripts.jsonl --out scored.jsonl --reward gsm8k

rlstream grade --in t.jsonl --out s.jsonl --reward customer_support:2,tool_calling

rlstream grade --in t.jsonl --out s.jsonl --reward-config rewards.yaml   # per agent

Rollouts a reward cannot grade (e.g. gsm8k without a gold label) are written with the reason to the failures file and counted; they never get a silent default score.
"""


class SpecResolver:
    """The reward spec for each agent: one for all (``--reward``) or per agent (YAML)."""

    def __init__(self, single: RewardSpec | None, config: RewardConfig | None) -> None:
        self.single, self.config = single, config
        self._cache: dict[str | None, RewardSpec] = {}

    def key(self, agent: str | None) -> str | None:
        if self.single is not None or self.config is None:
            return None
        return agent if agent in self.config.agents else None

    def spec(self, agent: str | None) -> RewardSpec:
        if self.single is not None:
            return self.single
        assert self.config is not None
        k = self.key(agent)
        if k not in self._cache:
            self._cache[k] = RewardSpec.for_agent(self.config, k)
        return self._cache[k]


def resolve_specs(reward: str | None, reward_config: Path | None) -> SpecResolver:
    """Either one spec for every agent (``--reward``) or one per agent (``--reward-config``)."""
    if (reward is None) == (reward_config is None):
        raise ConfigError(
            "give exactly one of --reward NAME[,NAME] or --reward-config FILE "
            f"(available rewards: {', '.join(available_rewards())})"
        )
    if reward is not None:
        return SpecResolver(RewardSpec.parse(reward), None)
    assert reward_config is not None
    require_files([reward_config])
    resolver = SpecResolver(None, load_reward_config(reward_config))
    for agent in resolver.config.agents if resolver.config else ():
        resolver.spec(agent)  # fail fast on a bad entry, before reading any data
    return resolver


def grade_transcripts(
    transcripts: Iterable[Transcript],
    specs: SpecResolver,
    total: int | None = None,
) -> Iterator[ScoredRollout | GradeFailure]:
    """Grade each agent's transcripts with its spec (group-aware rewards see their peers)."""
    by_agent: dict[str | None, list[Transcript]] = {}
    for t in transcripts:
        by_agent.setdefault(specs.key(t.agent), []).append(t)
    with progress("grading", total) as advance:
        for agent, items in by_agent.items():
            for result in grade_many(items, specs.spec(agent)):
                advance(1)
                yield result


def run_grade(src: Path, out: Path, failures: Path, specs: SpecResolver) -> Counter[str]:
    scored: list[ScoredRollout] = []
    failed: list[GradeFailure] = []
    for r in grade_transcripts(read_transcripts(src), specs):
        (failed if isinstance(r, GradeFailure) else scored).append(r)  # type: ignore[arg-type]
    write_models(out, scored)
    write_models(failures, failed)
    counts: Counter[str] = Counter(
        graded=len(scored), passed=sum(s.passed for s in scored), failed=len(failed)
    )
    counts.update(f"failed:{f.code}" for f in failed)
    return counts


@friendly_errors
def grade(
    src: Path = typer.Option(..., "--in", help="transcripts JSONL from `rlstream ingest`"),
    out: Path = typer.Option(..., "--out", help="graded rollouts JSONL"),
    reward: str = typer.Option(
        None,
        "--reward",
        help="reward name(s), comma separated, optional :weight; one of: "
        + ", ".join(available_rewards()),
    ),
    reward_config: Path = typer.Option(
        None, "--reward-config", help="YAML mapping agent -> rewards (see docs/rewards.md)"
    ),
    failures: Path = typer.Option(
        None, "--failures", help="where ungradable rollouts go [default: OUT.failures.jsonl]"
    ),
) -> None:
    """Grade transcripts with offline, versioned rewards."""
    require_files([src])
    specs = resolve_specs(reward, reward_config)  # flags first: they fail before any reading
    require_nonempty(src, "transcripts JSONL (from rlstream ingest)")
    failures = failures or out.with_name(out.name + ".failures.jsonl")
    c = run_grade(src, out, failures, specs)
    console.print(
        f"graded [bold]{c['graded']:,}[/] rollouts ({c['passed']:,} pass) → {out}; "
        f"{c['failed']:,} could not be graded → {failures}"
    )
    for key, n in sorted(c.items()):
        if key.startswith("failed:"):
            console.print(f"  {key[7:]}: {n:,}")


grade.__doc__ = (grade.__doc__ or "") + EXAMPLES
