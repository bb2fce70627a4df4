"""The admin call that hot-swaps what ``rlstream serve`` serves: ``POST /v1/rlstream/adapter``.

One shape for both sides: the server parses it, the ``serve`` deploy target sends it.
Strict (``extra="forbid"``), unlike the OpenAI request: only rlstream sends it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

ADAPTER_PATH = "/v1/rlstream/adapter"
#: the ``error.type`` of a failed load (HTTP 422: a bad adapter; 500: the server's side)
LOAD_FAILED = "adapter_load_failed"


class AdapterSwap(BaseModel):
    """Serve ``model_id`` from now on: the adapter folder at ``model_path`` on the base model
    (a training run's output folder or a full model folder also do; None: the base alone)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_id: str = Field(min_length=1)
    model_path: str | None = None
    promotion_id: str | None = None


class AdapterSwapped(BaseModel):
    """The answer once ``model_id`` serves: the one it replaced and the load time."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_id: str
    previous: str | None
    load_s: float
