"""``rlstream profile``: where does RL have signal in these graded rollouts?"""

from __future__ import annotations

from pathlib import Path

import orjson
import typer

from rlstream.metrics import render_profile
from rlstream.metrics.plot import profile_svg
from rlstream.pipeline.batch import profile_file
from rlstream.services.cli.common import friendly_errors, out, require_files, require_nonempty
from rlstream.services.cli.report import BarStages

EXAMPLES = """

[bold]Examples[/]

rlstream profile --in scored.jsonl

rlstream profile --in scored.jsonl --json | jq .gradient_support

rlstream profile --in scored.jsonl --svg profile.svg

Gradient support is the mean over groups (n ≥ 2) of p(1−p)/0.25: above 0.3 the set trains, below 0.05 it is flat. The unbiased form corrects small groups (× n/(n−1)).
"""


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
    with BarStages() as bars:
        p = profile_file(src, k_max=k_max, stages=bars)
    if svg is not None:
        svg.write_text(profile_svg(p))
    if as_json:
        out.print_json(orjson.dumps(p.to_json_dict()).decode())
    else:
        out.print(render_profile(p))


profile.__doc__ = (profile.__doc__ or "") + EXAMPLES
