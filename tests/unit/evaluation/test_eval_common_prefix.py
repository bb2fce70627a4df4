"""common_prefix: the shared token prefix the HF sampler prefills once per model."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlstream.evaluation.prefix import common_prefix

pytestmark = pytest.mark.unit


def test_the_shared_head_leaving_each_prompt_a_token_of_its_own() -> None:
    assert common_prefix([[1, 2, 3, 4], [1, 2, 3, 5, 6]]) == [1, 2, 3]
    # one prompt is the other's prefix: the shorter keeps its last token
    assert common_prefix([[1, 2, 3], [1, 2, 3, 4]]) == [1, 2]
    assert common_prefix([[7, 8, 9]]) == [7, 8]


def test_no_common_prefix_and_no_prompts() -> None:
    assert common_prefix([[1, 2], [3, 4]]) == []
    assert common_prefix([[1], [1]]) == []
    assert common_prefix([]) == []


def test_the_prefix_cache_setting_is_not_part_of_the_report_id(tmp_path: Path) -> None:
    from rlstream.evaluation import EvalRequest, ModelRef
    from rlstream.evaluation.run import report_id

    def request(**kw: object) -> EvalRequest:
        return EvalRequest(
            baseline=ModelRef(base="b", label="baseline"),
            candidate=ModelRef(base="b", adapter_dir="a", label="candidate"),
            heldout=tmp_path / "h.jsonl", reward_spec="tool_calling", **kw,  # type: ignore[arg-type]
        )  # fmt: skip

    assert request().prefix_cache is True
    assert report_id(request(prefix_cache=False), "0") == report_id(request(), "0")
    assert report_id(request(greedy=True), "0") != report_id(request(), "0")
