"""``rlstream profile``: where does RL have signal in these graded rollouts?"""

from __future__ import annotations

from pathlib import Path

import orjson
import typer

from rlstream.jsonl import read_scored
from rlstream.metrics import (
    Profile,
    ProfileAccumulator,
    RolloutRow,
    endorsed_features,
    render_profile,
)
from rlstream.metrics.plot import profile_svg
from rlstream.services.cli.common import (
    friendly_errors,
    out,
    progress,
    require_files,
    require_nonempty,
)

EXAMPLES = """

[bold]Examples[/]

rlstream profile --in scored.jsonl

rlstream profile --in scored.jsonl --json | jq .gradient_support

rlstream profile --in scored.jsonl --svg profile.svg

Gradient support is the mean over groups (n ≥ 2) of p(1−p)/0.25: above 0.3 the set trains, below 0.05 it is flat. The unbiased form corrects small groups (× n/(n−1)).
"""


def profile_file(src: Path, *, k_max: int | None = None, endorsed: tuple[str, ...] = ()) -> Profile:
    """Profile a scored file. Like curation, the hack scan treats the features the file's
    rewards declare (gsm8k: numbers) as endorsed, so the two never disagree on an alarm."""
    acc = ProfileAccumulator()
    rewards: set[str] = set()
    with progress("profiling") as advance:
        for s in read_scored(src):
            advance(1)
            rewards.update(r.reward for r in s.results)
            acc.add(RolloutRow.from_scored(s))
    endorsed = tuple(sorted({*endorsed, *endorsed_features(rewards)}))
    return acc.profile(k_max=k_max, endorsed=endorsed)


@friendly_errors
def profile(
    src: Path = typer.Option(..., "--in", help="graded rollouts JSONL from `rlstream grade`"),
    as_json: bool = typer.Option(False, "--json", help="print the profile as JSON"),
    k_max: int = typer.Option(
        None, "--k-max", min=1, help="largest k for pass@k, >= 1 [default: max n]"
    ),
    svg: Path = typer.Option(None, "--svg", help="also draw the histogram and pass@k curves"),
) -> None:
    """Gradient support, pass@k, headroom, a hack scan and a verdict for graded rollouts."""
    require_files([src])
    require_nonempty(src, "graded rollouts JSONL (from rlstream grade)")
    p = profile_file(src, k_max=k_max)
    if svg is not None:
        svg.write_text(profile_svg(p))
    if as_json:
        out.print_json(orjson.dumps(p.to_json_dict()).decode())
    else:
        out.print(render_profile(p))


profile.__doc__ = (profile.__doc__ or "") + EXAMPLES
