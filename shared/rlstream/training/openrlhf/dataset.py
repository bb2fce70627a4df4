"""grpo.jsonl -> the prompt JSONL OpenRLHF reads (``--data.input_key prompt
--data.label_key label --data.apply_chat_template``).

OpenRLHF hands the reward function only the templated prompt string, the decoded
prompt+response and the label (other keys are dropped: training-notes §2), so the label
carries everything the grader needs (:func:`rlstream.training.sample_label.pack_label`).
The label is a JSON string, as OpenRLHF passes it verbatim.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from rlstream.errors import InputError
from rlstream.training.sample_label import pack_label

#: format tag inside every label, checked by the reward runtime
LABEL_FORMAT = "rlstream.openrlhf.v1"


@dataclass(frozen=True)
class PromptFile:
    """The converted file's bytes, its row count and sha256."""

    data: bytes
    rows: int
    sha256: str


def convert_grpo(rows: Sequence[dict[str, Any]]) -> PromptFile:
    """One ``{"prompt": [messages], "label": "<json>"}`` line per GRPO row, in order."""
    out: list[bytes] = []
    for line, row in enumerate(rows, start=1):
        prompt = row.get("prompt")
        if not isinstance(prompt, list) or not prompt:
            raise InputError(f"grpo.jsonl row {line}: no prompt messages")
        record = {"prompt": prompt, "label": pack_label(row, line, LABEL_FORMAT)}
        out.append(orjson.dumps(record, option=orjson.OPT_SORT_KEYS) + b"\n")
    data = b"".join(out)
    return PromptFile(data=data, rows=len(out), sha256=hashlib.sha256(data).hexdigest())
