"""The prefix-cached HF sampler gives plain ``generate``'s outputs, and the evaluator's
report does not change with it (timings aside): on the demo's held-out prompts (one long
shared system prompt) and on prompts with no common prefix beyond the chat template."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from rlstream.curation import CurateOptions, curate, write_dataset
from rlstream.evaluation import EvalRequest, ModelRef, run_evaluation
from rlstream.evaluation.models import Decoding
from rlstream.evaluation.prompts import load_heldout
from rlstream.evaluation.sampler import HFSampler
from rlstream.grading import GradeFailure, RewardSpec, grade_many
from rlstream.ingest import IngestOptions, Reject, ingest_paths
from rlstream.sampledata.orders import write_order_logs

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def heldout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo pipeline's held-out file (its logs, grading and split; fewer tasks)."""
    folder = tmp_path_factory.mktemp("demo-heldout")
    write_order_logs(folder / "orders.jsonl", seed=7, n_tasks=200, rollouts=3)
    ts = [t for t in ingest_paths([folder / "orders.jsonl"], IngestOptions())]
    scored = [
        r
        for r in grade_many(
            [t for t in ts if not isinstance(t, Reject)], RewardSpec.parse("tool_calling")
        )
        if not isinstance(r, GradeFailure)
    ]
    write_dataset(curate(scored, CurateOptions(heldout_share=0.1)), folder / "ds")
    return folder / "ds" / "heldout.jsonl"


@pytest.fixture(scope="module")
def adapter(base_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LoRA adapter with random (non-zero) weights: a candidate unlike its base."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(base_model), dtype=torch.float32)
    lora = LoraConfig(
        r=4, lora_alpha=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False,
        task_type="CAUSAL_LM",
    )  # fmt: skip
    out = tmp_path_factory.mktemp("adapter")
    with warnings.catch_warnings():  # peft reads a transformers API deprecated for v6
        warnings.simplefilter("ignore", FutureWarning)
        get_peft_model(model, lora).save_pretrained(str(out))
    return out


def _both(ref: ModelRef, prompts: list[Any], decoding: Decoding) -> tuple[Any, Any, HFSampler]:
    plain = HFSampler(ref, device="cpu", prefix_cache=False)
    want = plain.generate(prompts, decoding)
    plain.close()
    fast = HFSampler(ref, device="cpu")
    got = fast.generate(prompts, decoding)
    fast.close()
    return want, got, fast


GREEDY = Decoding(greedy=True, max_new_tokens=40, batch_size=4)


def test_greedy_equals_generate_on_the_demo_heldout(base_model: Path, heldout: Path) -> None:
    prompts = [p.messages for p in load_heldout(heldout, 10)]
    want, got, fast = _both(ModelRef.of(base_model, None, "baseline"), prompts, GREEDY)
    assert got == want
    assert fast.prefix is not None and fast.prefix.prefilled > 60  # the system prompt, once
    assert any(g.finished for row in got for g in row)


def test_greedy_equals_generate_with_a_lora_candidate(
    base_model: Path, adapter: Path, heldout: Path
) -> None:
    prompts = [p.messages for p in load_heldout(heldout, 6)]
    ref = ModelRef.of(base_model, adapter, "candidate")
    want, got, _ = _both(ref, prompts, GREEDY)
    assert got == want
    base_out = _both(ModelRef.of(base_model, None, "b"), prompts, GREEDY)[1]
    assert got != base_out  # the adapter's own prefix KV, not its base's


def test_greedy_equals_generate_without_a_common_prefix(base_model: Path) -> None:
    prompts = [
        [{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "Hi!"}],
        [{"role": "user", "content": "What is 2 + 3? Reply with the number only."}],
        [
            {"role": "system", "content": "You are a pirate. Stay in character at all times."},
            {"role": "user", "content": "Where is the treasure buried, captain?"},
        ],
        [{"role": "user", "content": "Name three colours."}],
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Why is the sky blue?"},
        ],
    ]
    want, got, fast = _both(ModelRef.of(base_model, None, "baseline"), prompts, GREEDY)
    assert got == want
    assert fast.prefix is not None and fast.prefix.prefilled < 10  # the template's head only


def test_sampled_equals_generate_under_the_same_seed(base_model: Path, heldout: Path) -> None:
    prompts = [p.messages for p in load_heldout(heldout, 6)]
    decoding = Decoding(k=2, temperature=0.7, max_new_tokens=16, batch_size=3, seed=5)
    want, got, _ = _both(ModelRef.of(base_model, None, "baseline"), prompts, decoding)
    assert got == want and all(len(row) == 2 for row in got)


def test_the_report_is_the_same_with_and_without_the_cache(
    base_model: Path, adapter: Path, heldout: Path
) -> None:
    request = EvalRequest(
        baseline=ModelRef.of(base_model, None, "baseline"),
        candidate=ModelRef.of(base_model, adapter, "candidate"),
        heldout=heldout, reward_spec="tool_calling", greedy=True, max_new_tokens=24,
        max_prompts=8, batch_size=4, device="cpu", sampler="hf",
    )  # fmt: skip

    def content(prefix_cache: bool) -> dict[str, Any]:
        report = run_evaluation(request.model_copy(update={"prefix_cache": prefix_cache}))
        dump = report.model_dump(mode="json", exclude={"timings"})
        for side in ("baseline", "candidate"):
            dump[side].pop("seconds")
        return dump

    assert content(True) == content(False)


def test_the_bench_prints_its_ratio(base_model: Path, adapter: Path) -> None:
    """bench/eval_throughput.py reaches its verdict line (a tiny size; figures not asserted)."""
    import os
    import re
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    proc = subprocess.run(
        [
            sys.executable, str(root / "bench" / "eval_throughput.py"), "--prompts", "4",
            "--max-new-tokens", "8", "--batch-size", "2", "--adapter", str(adapter),
        ],
        capture_output=True, text=True, timeout=600, cwd=root, env=dict(os.environ), check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert re.search(
        r"both \d+\.\d+x .*plain@2/default \d+\.\d+x .*default/floor \d+\.\d+x; "
        r"identical outputs: True",
        last,
    )
