"""SFT tokens/s on CPU: rlstream's builtin backend against plain TRL (and a hand loop).

Three arms on the same dataset rows, model, chat template, LoRA and hyper-parameters, in
one process, one after the other (``--repeats`` alternates the order):

* ``rlstream``: :func:`rlstream.training.train` (dataset verification, the Recorder
  callback, metrics.json / run.json, adapter save);
* ``trl``: ``trl.SFTTrainer`` built directly with the same ``SFTConfig`` fields and
  ``peft.LoraConfig``, nothing of rlstream's around it;
* ``loop``: TRL's own batches and peft model trained by a plain torch loop (forward,
  backward, AdamW: no Trainer step, no per-step metrics), to measure TRL's per-step
  overhead;
* ``padded`` / ``padfree``: plain TRL with padding forced on (every row padded to the
  batch's longest) or off (``padding_free``: the batch's rows flattened into one sequence,
  position ids restarting per row), to measure what padding-free batches buy.

Every arm trains the rows rlstream's backend trains (left-truncated to ``--max-length`` by
``rlstream.training.builtin.fit``), so TRL never truncates and padding is the only
difference between ``padded`` and ``padfree``.

Clock: CPU seconds of this process during the training steps (``time.process_time``),
torch pinned to ``--threads`` threads, so neighbours on a shared machine do not count;
wall seconds are printed beside. Tokens are non-padding input tokens (TRL's
``num_tokens``). The verdict is rlstream/TRL tokens per CPU second (target: >= 0.95), then
a floor line (``bench/_floor.py``): LoRA training FLOPs per token of these rows x the tokens
trained / this machine's float32 matmul rate on ``--threads`` threads, and rlstream's
tokens per CPU second as a share of that limit.

    python bench/train_throughput.py                      # demo dataset, 6 steps, batch 8
    python bench/train_throughput.py --dataset DIR --steps 10 --repeats 2
    python bench/train_throughput.py --arms padded,padfree --repeats 3
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
from _floor import Shape, floor_line, matmul_rate, train_flops

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


def _rows(dataset: Path, config: Any) -> tuple[Any, list[dict[str, Any]]]:
    """rlstream's tokenizer (its training template) and the SFT rows its backend trains."""
    from transformers import AutoTokenizer

    from rlstream.training.basemodel import ensure_base_model
    from rlstream.training.builtin.fit import fit_sft_rows
    from rlstream.training.builtin.rows import trl_rows
    from rlstream.training.chat import training_template
    from rlstream.training.data import read_rows

    tok = AutoTokenizer.from_pretrained(str(ensure_base_model()))
    tok.chat_template = training_template(tok)
    rows, _ = fit_sft_rows(tok, trl_rows("sft", read_rows(dataset, "sft")), config.max_length)
    return tok, rows


def _setup(dataset: Path, config: Any) -> tuple[Any, Any, Any, Any]:
    """Model, tokenizer, rows and the SFTConfig fields rlstream's backend uses."""
    import torch
    from transformers import AutoModelForCausalLM

    from rlstream.training.basemodel import ensure_base_model
    from rlstream.training.builtin.trl_args import trl_kwargs

    tok, rows = _rows(dataset, config)
    model = AutoModelForCausalLM.from_pretrained(str(ensure_base_model()), dtype=torch.float32)
    kwargs = trl_kwargs(config, Path(tempfile.mkdtemp()), "cpu", bf16=False)
    return model, tok, rows, kwargs


#: SFTConfig fields per arm on top of rlstream's (rows are already cut to --max-length)
PADDING = {
    "padded": {"padding_free": False},
    "padfree": {"padding_free": True, "max_length": None},
}


def _trl_trainer(dataset: Path, config: Any, padding: str | None = None) -> Any:
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import PrinterCallback, set_seed
    from trl import SFTConfig, SFTTrainer

    set_seed(config.seed)
    model, tok, rows, kwargs = _setup(dataset, config)
    kwargs |= PADDING.get(padding or "", {})
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


def run_trl(dataset: Path, config: Any, padding: str | None = None) -> dict[str, float]:
    trainer = _trl_trainer(dataset, config, padding)
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
    tokens = padded = 0
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
        padded += int(batch["attention_mask"].numel())
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"tokens": tokens, "cpu": cpu, "wall": wall, "padded": padded}


def floor(dataset: Path, config: Any, threads: int, arm: dict[str, float]) -> str:
    """The floor line for an arm's tokens, at the mean FLOPs per token of the trained rows."""
    from transformers import AutoConfig

    from rlstream.training.basemodel import ensure_base_model

    tok, rows = _rows(dataset, config)
    lengths = [
        len(tok.apply_chat_template(r["messages"], tokenize=True, return_dict=True)["input_ids"])
        for r in rows
    ]
    shape = Shape.of(AutoConfig.from_pretrained(str(ensure_base_model())))
    per_token = train_flops(shape, lengths) / sum(lengths)
    what = f"LoRA, rows of mean {sum(lengths) / len(lengths):.0f} tokens, {threads} thread(s)"
    tokens = int(arm["tokens"])
    return floor_line(what, per_token * tokens, tokens, matmul_rate(threads), arm["rate"])


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
        "padded": lambda i: run_trl(dataset, config, "padded"),
        "padfree": lambda i: run_trl(dataset, config, "padfree"),
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
    if "padded" in best and "padfree" in best:
        parts.append(f"padfree/padded {best['padfree']['rate'] / best['padded']['rate']:.3f}x")
    if "loop" in best:
        share = best["loop"]["padded"] and best["loop"]["tokens"] / best["loop"]["padded"]
        parts.append(f"padded batches carry {1 - share:.1%} padding (loop arm)")
    print("tokens per CPU second: " + "; ".join(parts))
    lead = next(a for a in ("rlstream", "trl", "padfree", "padded", "loop") if a in best)
    print(floor(dataset, config, args.threads, best[lead]) + f" ({lead} arm, per CPU second)")


if __name__ == "__main__":
    main()
