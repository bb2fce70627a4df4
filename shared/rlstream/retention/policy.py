"""What retention keeps, per kind, and what one pass removed.

A period of ``None`` (or 0 in the settings) keeps that kind for ever. The defaults never
touch the lineage of a model that holds an alias or was ever promoted: the storage layer
leaves those out of every selection (:mod:`rlstream.storage._retention`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Kind = Literal["turn_buffers", "pending_rollouts", "datasets", "run_artifacts"]
#: every kind, in the order a pass applies them (and reports print them)
KINDS: tuple[Kind, ...] = ("turn_buffers", "pending_rollouts", "datasets", "run_artifacts")

DAY = timedelta(days=1)


class RetentionPolicy(BaseModel):
    """How long each kind is kept. ``datasets`` applies only beyond each agent's
    ``datasets_keep`` newest releases; either one unset keeps every release."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: closed turn buffers, after closing (ingest needs them to recognise late turns)
    turn_buffers: timedelta | None = 7 * DAY
    #: rollouts no release took (a lone group, no reward variance, a near duplicate ...)
    pending_rollouts: timedelta | None = 30 * DAY
    #: how many releases per agent are never pruned, whatever their age
    datasets_keep: int | None = Field(default=10, ge=0)
    #: a release older than this (and not among the newest) loses its training files
    datasets: timedelta | None = 30 * DAY
    #: the folders of runs that failed or that the gate rejected, after their last change
    run_artifacts: timedelta | None = 14 * DAY

    @field_validator("turn_buffers", "pending_rollouts", "datasets", "run_artifacts")
    @classmethod
    def _zero_keeps(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and value < timedelta(0):
            raise ValueError("a retention period cannot be negative (0 keeps for ever)")
        return value or None

    @field_validator("datasets_keep")
    @classmethod
    def _zero_keeps_all(cls, value: int | None) -> int | None:
        return value or None

    @classmethod
    def keep_everything(cls) -> RetentionPolicy:
        return cls(
            turn_buffers=None,
            pending_rollouts=None,
            datasets_keep=None,
            datasets=None,
            run_artifacts=None,
        )

    def applies(self, kind: Kind) -> bool:
        """Whether a pass removes anything of ``kind`` under this policy."""
        if kind == "datasets":
            return self.datasets is not None and self.datasets_keep is not None
        return getattr(self, kind) is not None

    def describe(self) -> str:
        """One line, e.g. ``turn_buffers 7d, pending_rollouts 30d, ...``."""

        def age(t: timedelta | None) -> str:
            if t is None:
                return "for ever"
            days = t / DAY
            return f"{days:g}d" if days >= 1 else f"{t.total_seconds():g}s"

        datasets = (
            f"beyond the newest {self.datasets_keep} per agent and {age(self.datasets)}"
            if self.applies("datasets")
            else "for ever"
        )
        return (
            f"turn_buffers {age(self.turn_buffers)}, pending_rollouts "
            f"{age(self.pending_rollouts)}, datasets {datasets}, run_artifacts "
            f"{age(self.run_artifacts)}"
        )


class RetentionReport(BaseModel):
    """One pass: per kind, what was removed (or, ``dry_run``, would be). ``removed``
    counts rows (turn buffers, rollouts), dataset releases or run folders; ``bytes`` the
    files' sizes; ``skipped`` what was selected but left in place (outside the configured
    folder, a symbolic link, holding a kept model's weights, or a file-system error)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dry_run: bool
    removed: dict[Kind, int] = Field(default_factory=dict)
    bytes: dict[Kind, int] = Field(default_factory=dict)
    skipped: dict[Kind, int] = Field(default_factory=dict)

    def lines(self) -> list[str]:
        """One line per kind, for the CLI and the log."""
        verb = "would remove" if self.dry_run else "removed"
        units = {
            "turn_buffers": "closed turn buffer(s)",
            "pending_rollouts": "pending rollout(s)",
            "datasets": "dataset release(s) (training files)",
            "run_artifacts": "run folder(s)",
        }
        out = []
        for kind in KINDS:
            if kind not in self.removed:
                out.append(f"{kind}: kept for ever (no retention set)")
                continue
            line = f"{kind}: {verb} {self.removed[kind]} {units[kind]}"
            if kind in self.bytes:
                line += f", {self.bytes[kind] / 1e6:.1f} MB"
            if self.skipped.get(kind):
                line += f"; {self.skipped[kind]} left in place (see the log)"
            out.append(line)
        return out
