"""Curation flags shared by ``rlstream curate`` and ``rlstream improve run``."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from rlstream.settings import load_settings

GranularityOpt = Annotated[
    str,
    typer.Option(
        help="auto | conversation | turn. turn: one SFT row per passing assistant turn, DPO "
        "pairs at a failing rollout's first divergence from the passing ones, next-action "
        "held-out prompts; auto picks turn when most rollouts call tools in 2+ turns",
    ),
]
HeldoutShareOpt = Annotated[
    float | None,
    typer.Option(
        help="share of task keys held out for evaluation [default: RLSTREAM_HELDOUT_SHARE or 0.1]",
    ),
]


def granularity_of(value: str) -> Literal["auto", "conversation", "turn"]:
    if value not in ("auto", "conversation", "turn"):
        raise typer.BadParameter(f"--granularity must be auto, conversation or turn, not {value!r}")
    return value  # type: ignore[return-value]


def heldout_share_of(value: float | None) -> float:
    return load_settings().heldout_share if value is None else value
