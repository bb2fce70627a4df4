"""How a long pipeline reports its stages (the CLI draws them; tests ignore them)."""

from __future__ import annotations

from typing import Protocol


class Stages(Protocol):
    def start(self, name: str, total: int | None = None) -> None:
        """A stage begins; ``total`` units of work when known."""

    def advance(self, n: int = 1) -> None: ...

    def done(self, name: str, seconds: float, summary: str) -> None:
        """A stage finished, with a one-line summary of what it produced."""


class NullStages:
    def start(self, name: str, total: int | None = None) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def done(self, name: str, seconds: float, summary: str) -> None:
        pass
