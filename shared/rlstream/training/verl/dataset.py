"""grpo.jsonl -> the rows ``verl.trainer.main_ppo`` reads (``RLHFDataset``).

The columns are verl's parquet schema: ``data_source``, ``prompt`` (the chat messages
verl templates), ``ability``, ``reward_model`` ({style, ground_truth}) and ``extra_info``
(here the row index, the rlstream task key and the reward spec). They are written as
JSONL, which verl 0.9.1 reads like parquet (``utils/dataset/rl_dataset.py`` loads a
``.jsonl`` file with ``datasets``' json builder): the bytes are deterministic, so the plan
pins them by sha256, and planning needs no pyarrow.

verl hands the reward function the decoded response, ``data_source``, ``ground_truth``
and ``extra_info`` but not the prompt, so ``ground_truth`` is rlstream's packed label
(:func:`rlstream.training.sample_label.pack_label`): prompt messages, tools and the
dataset's verifier label, as one JSON string.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from rlstream.errors import InputError
from rlstream.grading.samples import parse_label
from rlstream.training.sample_label import pack_label

#: format tag inside every ground truth, checked by the reward runtime
LABEL_FORMAT = "rlstream.verl.v1"
DATA_SOURCE = "rlstream"


@dataclass(frozen=True)
class TrainFile:
    """The converted file's bytes, its row count and sha256."""

    data: bytes
    rows: int
    sha256: str


def verl_row(row: dict[str, Any], line: int) -> dict[str, Any]:
    """One grpo.jsonl row in verl's columns."""
    prompt = row.get("prompt")
    if not isinstance(prompt, list) or not prompt:
        raise InputError(f"grpo.jsonl row {line}: no prompt messages")
    truth = pack_label(row, line, LABEL_FORMAT)
    verifier = parse_label(row["label"])
    task_key = verifier.get("task_key")
    return {
        "data_source": DATA_SOURCE,
        "prompt": prompt,
        "ability": "rlstream",
        "reward_model": {"style": "rule", "ground_truth": truth},
        "extra_info": {
            "index": line - 1,
            "rlstream_task_key": task_key if isinstance(task_key, str) else "",
            "reward_spec": verifier["reward_spec"],
        },
    }


def convert_grpo(rows: Sequence[dict[str, Any]]) -> TrainFile:
    """One verl row per GRPO row, in order."""
    out = [
        orjson.dumps(verl_row(row, line), option=orjson.OPT_SORT_KEYS) + b"\n"
        for line, row in enumerate(rows, start=1)
    ]
    data = b"".join(out)
    return TrainFile(data=data, rows=len(out), sha256=hashlib.sha256(data).hexdigest())
