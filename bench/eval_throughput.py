"""Evaluation sampling speed: the evaluator's HF sampler against plain ``generate``.

The demo's held-out set (``rlstream demo``'s order-support logs, seed 7, 1,500 tasks, 10%
held out, the first ``--prompts``), greedy, ``--max-new-tokens`` 48. Baseline (the small base
model) and candidate (base + a LoRA adapter: ``--adapter``, else one trained here for
``--train-steps`` demo SFT steps), each sampled three times in this process:

* ``plain@16``: plain ``generate`` in left-padded batches of 16 (``prefix_cache=False``; the
  evaluator's batch size before 2026-12-03);
* ``plain@B``: plain ``generate`` in batches of ``--batch-size`` (default: the evaluator's);
* ``default``: the evaluator's sampler: the common prefix prefilled once per model, rows of
  ``--batch-size`` leaving the batch at EOS while the next prompt joins.

Outputs are compared (they must be identical); per arm it prints prompt tokens prefilled,
decode row-steps, generated tokens, wall and CPU seconds; then the ratios, so the share of the
batch width and of the prefix cache reads apart.

Floor: linear-layer FLOPs per token (2 x the weights of every ``nn.Linear``, LM head
included; attention scores ignored, <5% at these lengths) x the tokens actually needed (the
prefix once, each prompt's own tokens, each generated token but the last) / this machine's
measured float32 matmul rate at the same thread count. ``default/floor`` says how far the
sampler is from the arithmetic limit.

    flock /tmp/heavy.lock python bench/eval_throughput.py             # 150 prompts, ~10 min
    python bench/eval_throughput.py --prompts 16 --train-steps 1      # a smoke run
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import header, linear_flops_per_token, matmul_rate

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the CLI: no spinning on a busy CPU
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def demo_heldout(folder: Path, n_tasks: int = 1500, seed: int = 7) -> Path:
    """The demo pipeline's dataset (its first four stages, its defaults): the folder."""
    from rlstream.curation import CurateOptions, curate, write_dataset
    from rlstream.grading import GradeFailure, RewardSpec, grade_many
    from rlstream.ingest import IngestOptions, Reject, ingest_paths
    from rlstream.sampledata.orders import REWARD, write_order_logs

    logs = folder / "orders.jsonl"
    write_order_logs(logs, seed, n_tasks, 3)
    transcripts = [t for t in ingest_paths([logs], IngestOptions()) if not isinstance(t, Reject)]
    scored = [
        r
        for r in grade_many(transcripts, RewardSpec.parse(REWARD))
        if not isinstance(r, GradeFailure)
    ]
    write_dataset(curate(scored, CurateOptions(heldout_share=0.1)), folder / "dataset")
    return folder / "dataset"


def train_adapter(dataset: Path, out: Path, steps: int) -> Path:
    """A candidate as the demo trains it (LoRA SFT, its settings), for ``steps`` steps."""
    from rlstream.training import TrainConfig, train

    config = TrainConfig(
        method="sft", max_steps=steps, batch_size=8, max_length=256, learning_rate=5e-4,
        lora_rank=8, lora_alpha=16, seed=7, device="cpu",
    )  # fmt: skip
    run = train(dataset, output_dir=out, config=config)
    assert run.status == "succeeded" and run.adapter_dir is not None, run.reason
    return Path(run.adapter_dir)


def sample(ref: Any, prompts: list[Any], decoding: Any, cached: bool) -> dict[str, Any]:
    from rlstream.evaluation.sampler import HFSampler

    sampler = HFSampler(ref, device="cpu", prefix_cache=cached)
    cpu, wall = time.process_time(), time.perf_counter()
    gens = sampler.generate(prompts, decoding)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    prefix = sampler.prefix.prefilled if sampler.prefix is not None else 0
    flops = linear_flops_per_token(sampler.model)
    sampler.close()
    return {
        "gens": gens, "cpu": cpu, "wall": wall, "flops": flops,
        "prefill": sampler.stats["prefill_tokens"] + prefix,
        "decode": sampler.stats["decode_tokens"],
        "generated": sum(g.tokens + g.finished for row in gens for g in row),
    }  # fmt: skip


def needed_tokens(sampler_tok: Any, prompts: list[Any], gens: list[Any]) -> int:
    """The prefix once, every prompt's own tokens, every generated token but the last."""
    from rlstream.evaluation.prefix import common_prefix

    encoded = [sampler_tok(p) for p in prompts]
    p = len(common_prefix(encoded))
    own = sum(len(e) - p for e in encoded)
    gen = sum(max(g.tokens + g.finished - 1, 0) for row in gens for g in row)
    return p + own + gen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--prompts", type=int, default=150, help="held-out prompts (demo: 150)")
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--batch-size", type=int, default=None, help="default: the evaluator's")
    ap.add_argument("--adapter", type=Path, help="the candidate's LoRA adapter")
    ap.add_argument("--train-steps", type=int, default=4, help="without --adapter")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch threads")
    args = ap.parse_args()
    header("evaluation sampling: prefix-cached HF sampler vs plain generate (greedy)")

    import torch

    from rlstream.evaluation import ModelRef
    from rlstream.evaluation.models import Decoding
    from rlstream.evaluation.prompts import load_heldout
    from rlstream.evaluation.sampler import HFSampler
    from rlstream.training import ensure_base_model

    torch.set_num_threads(args.threads)
    work = Path(tempfile.mkdtemp(prefix="eval-bench-"))
    dataset = demo_heldout(work)
    prompts = [p.messages for p in load_heldout(dataset / "heldout.jsonl", args.prompts)]
    base = ensure_base_model()
    adapter = args.adapter or train_adapter(dataset, work / "run", args.train_steps)
    decoding = Decoding(greedy=True, max_new_tokens=args.max_new_tokens)
    if args.batch_size is not None:
        decoding = decoding.model_copy(update={"batch_size": args.batch_size})
    old = decoding.model_copy(update={"batch_size": 16})
    width = decoding.batch_size
    rate = matmul_rate()
    encoder = HFSampler(ModelRef.of(base, None, "tok"), device="cpu")._encode
    print(f"{len(prompts)} held-out prompts, greedy, max_new_tokens {args.max_new_tokens}, "
          f"batch {width} (budget {decoding.batch_tokens} KV tokens), torch threads "
          f"{args.threads}; candidate {adapter}; float32 matmul {rate / 1e9:.1f} GFLOP/s")  # fmt: skip
    cols = ("model", "arm", "prefilled", "decode", "generated", "wall s", "cpu s", "floor s")
    print("  ".join(f"{c:>10}" for c in cols))
    walls: dict[str, float] = {"plain@16": 0.0, f"plain@{width}": 0.0, "default": 0.0}
    per_model, floor_total, same = [], 0.0, True
    for ref in (ModelRef.of(base, None, "baseline"), ModelRef.of(base, adapter, "candidate")):
        arms = {
            "plain@16": sample(ref, prompts, old, cached=False),
            f"plain@{width}": sample(ref, prompts, decoding, cached=False),
            "default": sample(ref, prompts, decoding, cached=True),
        }
        fast = arms["default"]
        same = same and all(r["gens"] == fast["gens"] for r in arms.values())
        floor = fast["flops"] * needed_tokens(encoder, prompts, fast["gens"]) / rate
        floor_total += floor
        for arm, r in arms.items():
            cells = (ref.label, arm, r["prefill"], r["decode"], r["generated"])
            print("  ".join(f"{c:>10}" for c in cells) + f"  {r['wall']:>10.1f}  "
                  f"{r['cpu']:>10.1f}  {floor:>10.1f}")  # fmt: skip
            walls[arm] += r["wall"]
        per_model.append(arms["plain@16"]["wall"] / fast["wall"])
    print(
        f"plain@16/default wall: baseline {per_model[0]:.2f}x, candidate {per_model[1]:.2f}x, "
        f"both {walls['plain@16'] / walls['default']:.2f}x (target >= 3x); "
        f"plain@16/plain@{width} {walls['plain@16'] / walls[f'plain@{width}']:.2f}x (batch "
        f"width alone); plain@{width}/default {walls[f'plain@{width}'] / walls['default']:.2f}x "
        f"(prefix cache + continuous batching alone); default/floor "
        f"{walls['default'] / floor_total:.1f}x; identical outputs: {same}"
    )


if __name__ == "__main__":
    main()
