"""Dataset rows -> the columns TRL's trainers read, one fixed schema per column.

- SFT: ``messages`` (conversational; the loss goes to assistant turns only).
- DPO: ``prompt`` / ``chosen`` / ``rejected`` message lists.
- GRPO: ``prompt`` messages; ``label`` (verifier context, JSON) and ``tools_json`` reach the
  reward as keyword arguments. Lineage columns stay out: TRL would pass or collate them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from rlstream.training.chat import normalise_message
from rlstream.training.config import TrainMethod


def _msgs(value: Any) -> list[dict[str, Any]]:
    return [normalise_message(m) for m in value or ()]


def trl_rows(method: TrainMethod, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The columns each trainer needs, in dataset order."""
    if method == "sft":
        return [{"messages": _msgs(r["messages"])} for r in rows]
    if method == "dpo":
        return [
            {
                "prompt": _msgs(r["prompt"]),
                "chosen": _msgs(r["chosen"]),
                "rejected": _msgs(r["rejected"]),
            }
            for r in rows
        ]
    return [
        {
            "prompt": _msgs(r["prompt"]),
            "label": r["label"],
            "tools_json": orjson.dumps(r.get("tools") or []).decode(),
        }
        for r in rows
    ]


def one_turn_rows(rows: Sequence[dict[str, Any]]) -> bool:
    """Turn-level SFT rows (``loss_mask`` 1 on the last message only, as curation writes
    them for multi-turn agents)."""
    return bool(rows) and all(
        isinstance(m := r.get("loss_mask"), list) and sum(m) == 1 and m[-1] == 1 for r in rows
    )


def as_prompt_completion(data_rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` -> ``prompt`` + ``completion`` (the last message): TRL then puts the loss
    on that turn only, not on the earlier assistant turns of the prefix."""
    return [{"prompt": r["messages"][:-1], "completion": r["messages"][-1:]} for r in data_rows]
