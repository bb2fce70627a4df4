"""common_prefix: the shared token prefix the HF sampler prefills once per model."""

from __future__ import annotations

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
