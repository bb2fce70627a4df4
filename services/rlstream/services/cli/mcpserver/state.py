"""What one ``rlstream mcp`` server remembers between calls: the workspace and the latest
profile, dataset and evaluation (served as resources)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlstream.workspace import Workspace


@dataclass
class State:
    workspace: Workspace
    profile: dict[str, Any] | None = None
    dataset: Path | None = None
    evaluation: Path | None = None
