"""Reading rlstream's events downstream: unknown fields are dropped, not refused.

rlstream's own consumers parse strictly (``extra="forbid"``): what rlstream accepts is
exactly the contract it knows. A downstream consumer should not be that strict, or every
optional field a newer rlstream adds (no ``schema_version`` bump, see docs/events.md) breaks
it. :func:`read_event` is the reading path the docs recommend: fields this version of the
models does not know, at any depth, are dropped; everything else is validated as usual (a
wrong type, a missing required field or another ``schema_version`` still fails).
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

#: a model nests at most this deep; each pass removes every unknown field pydantic reports
_MAX_PASSES = 8


def _drop(data: Any, loc: tuple[int | str, ...]) -> bool:
    """Delete the field at ``loc``; a step that is not in the data (a union member's
    name in pydantic's path) is skipped. False when nothing was found to delete."""
    node = data
    for step in loc[:-1]:
        in_dict = isinstance(node, dict) and step in node
        if in_dict or (isinstance(node, list) and isinstance(step, int) and step < len(node)):
            node = node[step]
    if isinstance(node, dict) and loc and loc[-1] in node:
        del node[loc[-1]]
        return True
    return False


def read_event(model: type[M], data: bytes | str | dict[str, Any]) -> M:
    """``model`` from a record value, ignoring fields a newer producer added."""
    obj: Any = json.loads(data) if isinstance(data, (bytes, str)) else json.loads(json.dumps(data))
    for _ in range(_MAX_PASSES):
        try:
            return model.model_validate(obj)
        except ValidationError as exc:
            extras = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
            if not any([_drop(obj, tuple(loc)) for loc in extras]):
                raise
    return model.model_validate(obj)
