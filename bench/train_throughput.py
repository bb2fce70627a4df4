"""SFT tokens/s on CPU: rlstream's builtin backend against plain TRL (and a hand loop).

Three arms on the same dataset rows, model, chat template, LoRA and hyper-parameters, in
one process, one after the other (``--repeats`` alternates the order):

* ``rlstream``: :func:`rlstream.training.train` (dataset verification, the Recorder
  callback, metrics.json / run.json, adapter save);
* ``trl``: ``trl.SFTTrainer`` built directly with the same ``SFTConfig`` fields and
  ``peft.LoraConfig``, nothing of rlstream's around it;
* ``loop``: TRL's own batches and peft model trained by a plain torch loop (forward,
  backward, AdamW: no Trainer step, no per-step metrics), to measure TRL's per-step
  overhead.

Clock: CPU seconds of this process during the training steps (``time.process_time``),
torch pinned to ``--threads`` threads, so neighbours on a shared machine do not count;
wall seconds are printed beside. Tokens are non-padding input tokens (TRL's
``num_tokens``). The verdict is rlstream/TRL tokens per CPU second (target: >= 0.95).

    python bench/train_throughput.py                      # demo dataset, 6 steps, batch 8
    python bench/train_throughput.py --dataset DIR --steps 10 --repeats 2
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from _common import demo_dataset

# peft/TRL read transformers' deprecated alias (as in the builtin backend): not ours, noise
warnings.filterwarnings("ignore", ".*is_gradient_checkpointing.*", FutureWarning)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def run_rlstream(dataset: Path, config: Any, out: Path) -> dict[str, float]:
    from rlstream.training import train

    result = train(dataset, output_dir=out, config=config)
    assert result.status == "succeeded", result.reason
    m = result.metrics
    return {"tokens": m["tokens"], "cpu": m["train_cpu_seconds"], "wall": m["train_seconds"]}


def _setup(dataset: Path, config: Any) -> tuple[Any, Any, Any, Any]:
    """Model, tokenizer (rlstream's training template), rows and the SFTConfig fields."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rlstream.training.basemodel import ensure_base_model
    from rlstream.training.builtin.rows import trl_rows
    from rlstream.training.builtin.trl_args import trl_kwargs
    from rlstream.training.chat import training_template
    from rlstream.training.data import read_rows

    base = ensure_base_model()
    tok = AutoTokenizer.from_pretrained(str(base))
    tok.chat_template = training_template(tok)
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    rows = trl_rows("sft", read_rows(dataset, "sft"))
    kwargs = trl_kwargs(config, Path(tempfile.mkdtemp()), "cpu", bf16=False)
    return model, tok, rows, kwargs


def _trl_trainer(dataset: Path, config: Any) -> Any:
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import PrinterCallback, set_seed
    from trl import SFTConfig, SFTTrainer

    set_seed(config.seed)
    model, tok, rows, kwargs = _setup(dataset, config)
    lora = LoraConfig(
        r=config.lora_rank, lora_alpha=config.lora_alpha, target_modules="all-linear",
        task_type="CAUSAL_LM",
    )  # fmt: skip
    trainer = SFTTrainer(
        model=model, args=SFTConfig(**kwargs), train_dataset=Dataset.from_list(rows),
        processing_class=tok, peft_config=lora,
    )  # fmt: skip
    trainer.remove_callback(PrinterCallback)
    return trainer


def run_trl(dataset: Path, config: Any) -> dict[str, float]:
    trainer = _trl_trainer(dataset, config)
    cpu, wall = time.process_time(), time.perf_counter()
    trainer.train()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    tokens = max(h.get("num_tokens", 0) for h in trainer.state.log_history)
    return {"tokens": tokens, "cpu": cpu, "wall": wall}


def run_loop(dataset: Path, config: Any) -> dict[str, float]:
    """TRL's own batches (its dataloader, collator, padding and labels) and peft model,
    trained by a plain loop: forward, backward, AdamW. What is left is the Trainer's step."""
    import torch

    trainer = _trl_trainer(dataset, config)
    model = trainer.model
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=trainer.args.learning_rate)
    batches = iter(trainer.get_train_dataloader())
    model.train()
    tokens = 0
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(config.max_steps):
        batch = next(batches)
        loss = model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
            labels=batch["labels"],
        ).loss  # fmt: skip
        loss.backward()
        opt.step()
        opt.zero_grad()
        tokens += int(batch["attention_mask"].sum())
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"tokens": tokens, "cpu": cpu, "wall": wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--dataset", type=Path, help="a curated dataset (default: rlstream demo's)")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (CPU time per core)")
    ap.add_argument("--repeats", type=int, default=1, help="rounds; odd rounds reverse order")
    ap.add_argument("--arms", default="rlstream,trl,loop")
    args = ap.parse_args()

    import torch

    from rlstream.training import TrainConfig

    torch.set_num_threads(args.threads)
    work = Path(tempfile.mkdtemp(prefix="train-bench-"))
    dataset = args.dataset or demo_dataset(work / "demo")
    config = TrainConfig(
        method="sft", max_steps=args.steps, batch_size=args.batch_size,
        max_length=args.max_length, device="cpu", log_every=1,
    )  # fmt: skip
    arms = args.arms.split(",")
    runners = {
        "rlstream": lambda i: run_rlstream(dataset, config, work / f"run{i}"),
        "trl": lambda i: run_trl(dataset, config),
        "loop": lambda i: run_loop(dataset, config),
    }
    best: dict[str, dict[str, float]] = {}
    for i in range(args.repeats):
        for arm in arms if i % 2 == 0 else arms[::-1]:
            got = runners[arm](i)
            got["rate"] = got["tokens"] / max(got["cpu"], 1e-9)
            if arm not in best or got["rate"] > best[arm]["rate"]:
                best[arm] = got
    print(f"SFT, {args.steps} steps x batch {args.batch_size}, max_length {args.max_length}, "
          f"torch threads {args.threads}, best of {args.repeats}, dataset {dataset}")  # fmt: skip
    print(
        f"{'arm':10} {'tokens':>8} {'cpu s':>8} {'wall s':>8} {'tok/cpu-s':>10} {'tok/wall-s':>10}"
    )
    for arm in arms:
        b = best[arm]
        print(f"{arm:10} {b['tokens']:>8,.0f} {b['cpu']:>8.1f} {b['wall']:>8.1f} "
              f"{b['rate']:>10.1f} {b['tokens'] / max(b['wall'], 1e-9):>10.1f}")  # fmt: skip
    parts = []
    if "rlstream" in best and "trl" in best:
        parts.append(
            f"rlstream/trl {best['rlstream']['rate'] / best['trl']['rate']:.3f}x (target >= 0.95)"
        )
    if "trl" in best and "loop" in best:
        parts.append(f"trl/loop {best['trl']['rate'] / best['loop']['rate']:.3f}x")
    print("tokens per CPU second: " + "; ".join(parts))


if __name__ == "__main__":
    main()
