"""How many prompts the HF sampler decodes together: ``batch_size``, narrowed so one batch's
KV cache stays within ``batch_tokens`` (long agent prompts must not exhaust memory)."""

from __future__ import annotations

from rlstream.evaluation.models import Decoding, EvalRequest
from rlstream.evaluation.sampler import prompts_per_batch


def test_short_prompts_get_the_whole_batch_size() -> None:
    d = Decoding(greedy=True, max_new_tokens=48)
    assert prompts_per_batch([[1] * 120] * 300, d) == d.batch_size == 128


def test_long_prompts_are_narrowed_to_the_token_budget() -> None:
    d = Decoding(greedy=True, max_new_tokens=96)
    # 3,000-token agent prompts: 32,768 // 3,096 = 10 prompts per batch
    assert prompts_per_batch([[1] * 3000, [1] * 2000], d) == 10


def test_samples_per_prompt_count_against_the_budget() -> None:
    d = Decoding(k=4, max_new_tokens=64, batch_tokens=4096)
    assert prompts_per_batch([[1] * 192], d) == 4096 // (256 * 4) == 4


def test_a_prompt_longer_than_the_budget_still_runs_alone() -> None:
    d = Decoding(greedy=True, batch_tokens=100)
    assert prompts_per_batch([[1] * 5000], d) == 1
    assert prompts_per_batch([], d) == 1


def test_the_request_carries_the_budget_flat_and_in_decoding() -> None:
    r = EvalRequest.model_validate(
        {"baseline": {"base": "b", "label": "b"}, "candidate": {"base": "b", "label": "c"},
         "heldout": "h.jsonl", "reward_spec": "exact", "batch_tokens": 2048}
    )  # fmt: skip
    assert r.batch_tokens == r.decoding.batch_tokens == 2048
