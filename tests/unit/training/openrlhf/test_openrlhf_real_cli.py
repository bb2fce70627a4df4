"""Our argv through the pinned release's own CLI code (from the real wheel): its argparse
parser, ``hierarchize`` and every startup assert run for real; only ray/vLLM/deepspeed are
stubbed and the final ``train(args)`` (which needs GPUs) is replaced by a capture."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _helpers_openrlhf import CONFIG_MODULE, Cfg, run_real_cli

from rlstream.training.openrlhf.extract import module_path, source_from_wheel
from rlstream.training.openrlhf.pin import OPENRLHF_VERSION
from rlstream.training.openrlhf.prepare import prepare
from rlstream.training.openrlhf.wheel import fetch_wheel
from rlstream_testkit.paths import cache_dir

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def cli() -> Callable[[list[str]], Any]:
    wheel = fetch_wheel(OPENRLHF_VERSION, cache_dir() / "openrlhf")
    source, config = source_from_wheel(wheel), source_from_wheel(wheel, CONFIG_MODULE)
    return lambda argv: run_real_cli(source, config, argv)


@pytest.mark.parametrize(
    "cfg",
    [
        Cfg(),
        Cfg(beta=0.04, temperature=0.7, lora_dropout=0.05),
        Cfg(backend_args=("--actor.policy_loss_type=gspo", "--reward.clip_range=-1 1")),
        Cfg(max_steps=1, batch_size=2, num_generations=8),
    ],
)
def test_the_release_accepts_our_grpo_argv(
    cli: Callable[[list[str]], Any], maths_dataset: Path, tmp_path: Path, cfg: Cfg
) -> None:
    plan = prepare(maths_dataset, "/models/base", "grpo", cfg, tmp_path)
    assert plan.argv[:3] == ["python3", "-m", "openrlhf.cli.train_ppo_ray"]
    args = cli(plan.argv[3:])
    assert args.algo.advantage.estimator == "group_norm"
    assert args.rollout.n_samples_per_prompt == cfg.num_generations > 1
    assert args.reward.remote_url == [str(tmp_path / "openrlhf" / "reward_func.py")]
    assert args.data.prompt_dataset == str(tmp_path / "openrlhf" / "prompts.jsonl")
    assert (args.data.input_key, args.data.label_key) == ("prompt", "label")
    assert args.critic.model_name_or_path is None  # group_norm: no critic
    assert args.ds.lora.rank == cfg.lora_rank and args.algo.kl.init_coef == cfg.beta
    # OpenRLHF's own step formula (ppo_trainer.py) gives what the plan says
    rows = plan.summary["prompts"]
    steps = (
        rows
        * args.rollout.n_samples_per_prompt
        // args.train.batch_size
        * args.train.num_episodes
        * args.train.max_epochs
    )
    assert steps == plan.steps >= cfg.max_steps


def test_what_we_refuse_the_release_would_not_catch_before_the_gpus(
    cli: Callable[[list[str]], Any],
) -> None:
    """argparse takes an abbreviation and a 0-step batch size without complaint; only an
    unknown flag (exit 2) and a group estimator with n=1 (assert) fail at parse time."""
    base = ["--actor.model_name_or_path", "m", "--reward.remote_url", "r.py"]
    args = cli([*base, "--actor.adam.l", "3e-5"])
    assert args.actor.adam.lr == 3e-5  # silently taken as --actor.adam.lr
    args = cli([*base, "--train.batch_size", "128"])
    assert args.train.batch_size == 128  # 10 prompts x 8 samples // 128 = 0 steps, no error
    with pytest.raises(SystemExit) as exit_info:
        cli([*base, "--pretrain", "m"])
    assert exit_info.value.code == 2
    with pytest.raises(AssertionError, match="n_samples_per_prompt > 1"):
        cli([*base, "--algo.advantage.estimator", "group_norm"])


@pytest.fixture(scope="module")
def deepspeed_cli() -> Callable[[str, list[str]], Any]:
    wheel = fetch_wheel(OPENRLHF_VERSION, cache_dir() / "openrlhf")
    config = source_from_wheel(wheel, CONFIG_MODULE)
    sources = {c: source_from_wheel(wheel, module_path(c)) for c in ("train_sft", "train_dpo")}
    return lambda cli, argv: run_real_cli(sources[cli], config, argv)


@pytest.mark.parametrize(
    ("method", "cfg"),
    [
        ("sft", Cfg()),
        ("sft", Cfg(batch_size=2, gradient_accumulation_steps=4, max_steps=1)),
        ("dpo", Cfg(beta=0.1)),
        ("dpo", Cfg(beta=0.05, backend_args=("--model.ipo_enable", "--model.nll_loss_coef=0.2"))),
    ],
)
def test_the_release_accepts_our_sft_and_dpo_argv(
    deepspeed_cli: Callable[[str, list[str]], Any],
    maths_dataset: Path,
    tmp_path: Path,
    method: str,
    cfg: Cfg,
) -> None:
    plan = prepare(maths_dataset, "/models/base", method, cfg, tmp_path)
    cli = f"train_{method}"
    assert plan.argv[:5] == ["deepspeed", "--num_gpus", "1", "--module", f"openrlhf.cli.{cli}"]
    # the deepspeed launcher adds --local_rank=<rank> for each process it starts
    args = deepspeed_cli(cli, [*plan.argv[5:], "--local_rank=0"])
    assert args.model.model_name_or_path == "/models/base"
    assert args.data.dataset == str(maths_dataset / f"{method}.jsonl")
    assert args.data.apply_chat_template and args.ds.lora.rank == cfg.lora_rank
    assert args.train.batch_size == cfg.batch_size * cfg.gradient_accumulation_steps
    if method == "sft":
        assert args.data.multiturn and args.data.input_key == "messages"
    else:
        assert (args.data.prompt_key, args.data.chosen_key) == ("prompt", "chosen")
        assert args.model.beta == cfg.beta and args.ref.model_name_or_path == "/models/base"
    rows = plan.summary["rows"]
    micro, batch, epochs = args.train.micro_batch_size, args.train.batch_size, args.train.max_epochs
    if method == "sft":  # train_sft.py, drop_last micro batches, one GPU
        steps = (rows // micro) * epochs // (batch // micro)
    else:  # train_dpo.py
        steps = math.ceil(epochs * (rows // batch))
    assert steps == plan.steps >= cfg.max_steps
