"""Erasure errors (one line each at the CLI)."""

from __future__ import annotations

from rlstream.errors import ConfigError


class UnknownErasureError(ConfigError):
    """``--resume`` named an erasure that is not recorded."""

    code = "unknown_erasure"
