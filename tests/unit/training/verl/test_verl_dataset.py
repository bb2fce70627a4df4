"""verl's rows load through the loader verl 0.9.1's ``RLHFDataset`` uses for ``.jsonl``
(``datasets.load_dataset("json", ...)``, ``utils/dataset/rl_dataset.py``) and read back
exactly as written: tool calls, null contents and plain turns in one file."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from rlstream.training.verl.dataset import LABEL_FORMAT, convert_grpo

pytestmark = pytest.mark.unit

LABEL = orjson.dumps({"reward_spec": "gsm8k@1.0.0", "task_key": "t1", "label": "#### 1"}).decode()
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
ROWS = [
    {
        "prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}],
        "label": LABEL,
    },
    {
        "prompt": [
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
        ],
        "label": LABEL,
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
    },
]


def test_rows_load_with_datasets_json_builder_unchanged(tmp_path: Path) -> None:
    import datasets

    train = convert_grpo(ROWS)
    path = tmp_path / "train.jsonl"
    path.write_bytes(train.data)
    loaded = datasets.load_dataset("json", data_files=str(path), cache_dir=str(tmp_path / "c"))
    got = list(loaded["train"])
    written = [orjson.loads(line) for line in train.data.splitlines()]
    assert got == written and len(got) == train.rows == 2
    assert got[1]["prompt"][1]["tool_calls"] == [CALL]
    truth = orjson.loads(got[1]["reward_model"]["ground_truth"])
    assert truth["format"] == LABEL_FORMAT and truth["tools"] == ROWS[1]["tools"]
    assert got[0]["extra_info"] == {
        "index": 0,
        "rlstream_task_key": "t1",
        "reward_spec": "gsm8k@1.0.0",
    }
