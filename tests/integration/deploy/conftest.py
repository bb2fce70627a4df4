"""Deploy tests reuse the service tests' Kafka helpers (stack.py)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "services"))
