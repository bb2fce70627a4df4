"""The overrides rlstream writes for ``verl.trainer.main_ppo``: goldens per method, and
every refusal (unknown or misspelled keys, added/deleted keys, wrong types, batch
arithmetic verl would fail or that trains 0 steps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlstream.errors import ConfigError
from rlstream.training.config import TrainConfig
from rlstream.training.verl.keys import OverrideError, keys, parse_overrides
from rlstream.training.verl.overrides import RunPaths
from rlstream.training.verl.prepare import build_argv

pytestmark = pytest.mark.unit
GOLDEN = Path(__file__).parent / "golden"
PATHS = RunPaths(
    train_file=Path("/runs/r1/verl/train.jsonl"),
    reward_file=Path("/runs/r1/verl/reward_fn.py"),
    checkpoints=Path("/runs/r1/verl/checkpoints"),
)
#: the methods' resolved defaults (rlstream.training.config.METHOD_DEFAULTS)
RESOLVED = {"grpo": (5e-5, 0.0), "gspo": (5e-5, 0.0), "ppo": (5e-5, 0.01)}


def _config(method: str, **kw: object) -> TrainConfig:
    lr, beta = RESOLVED[method]
    base: dict[str, object] = {
        "method": method,
        "learning_rate": lr,
        "beta": beta,
        "max_steps": 4,
        "batch_size": 4,
        "num_generations": 4,
        "max_length": 512,
        "max_new_tokens": 128,
        "seed": 7,
    }
    return TrainConfig.model_validate({**base, **kw})


def _argv(method: str, rows: int = 6, **kw: object) -> tuple[list[str], int, bool]:
    return build_argv("/models/base", method, _config(method, **kw), rows, PATHS, "r1")


@pytest.mark.parametrize("method", ["grpo", "gspo", "ppo"])
def test_overrides_match_the_golden(method: str) -> None:
    argv, steps, critic = _argv(method)
    golden = (GOLDEN / f"verl_{method}.txt").read_text().splitlines()
    assert argv == golden
    assert steps == 4 and critic is (method == "ppo")


def test_methods_map_to_verls_algorithms() -> None:
    grpo = set(_argv("grpo")[0])
    gspo = set(_argv("gspo")[0])
    ppo = set(_argv("ppo")[0])
    assert {"algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=4"} <= grpo
    assert "actor_rollout_ref.actor.policy_loss.loss_mode=gspo" in gspo - grpo
    assert "algorithm.adv_estimator=gae" in ppo and "critic.model.path=/models/base" in ppo
    assert (
        "actor_rollout_ref.rollout.n=1" in ppo
    )  # one sample per prompt: the critic is the baseline
    # PPO's beta is the in-reward KL penalty; GRPO's 0 means no reference model at all
    assert {"algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.kl_coef=0.01"} <= ppo
    assert "actor_rollout_ref.actor.use_kl_loss=false" in grpo
    beta = set(_argv("grpo", beta=0.04)[0])
    assert {
        "actor_rollout_ref.actor.use_kl_loss=true",
        "actor_rollout_ref.actor.kl_loss_coef=0.04",
    } <= beta


@pytest.mark.parametrize("method", ["sft", "dpo"])
def test_sft_and_dpo_are_refused_with_the_reason(method: str) -> None:
    cfg = _config("grpo").model_copy(update={"method": method})
    with pytest.raises(ConfigError, match=f"does not train {method}"):
        build_argv("/m", method, cfg, 6, PATHS, "r1")


def test_every_emitted_key_is_in_the_manifest() -> None:
    for method in ("grpo", "gspo", "ppo"):
        for item in _argv(method)[0][3:]:
            assert item.partition("=")[0] in keys()


@pytest.mark.parametrize(
    ("arg", "match"),
    [
        ("trainer.n_gpu_per_node=2", r"not a key .*\(did you mean trainer.n_gpus_per_node\?\)"),
        ("actor_rollout_ref.actor.optim.learning_rate=1e-5", "not a key of verl 0.9.1"),
        ("trainer.unknown=1", "not a key"),
        ("+trainer.new_key=1", "adding or deleting keys"),
        ("++trainer.total_epochs=2", "adding or deleting keys"),
        ("~trainer.logger", "adding or deleting keys"),
        ("trainer.total_epochs", "not a key=value override"),
        ("trainer.total_epochs=two", "is a str, the key is a int"),
        ("trainer.val_before_train=1", "is a int, the key is a bool"),
        ("actor_rollout_ref.actor.optim.lr=inf", "not a finite number"),
        ("trainer.logger=console", "is a str, the key is a list"),
        ("reward.custom_reward_function.path=/tmp/other.py", "cannot be overridden"),
        ("custom_reward_function.path=/tmp/other.py", "cannot be overridden"),
    ],
)
def test_bad_backend_args_are_refused(arg: str, match: str) -> None:
    with pytest.raises(OverrideError, match=match):
        _argv("grpo", backend_args=(arg,))


def test_a_backend_arg_replaces_the_key_it_names() -> None:
    argv, _, _ = _argv(
        "grpo", backend_args=("actor_rollout_ref.rollout.gpu_memory_utilization=0.7",)
    )
    util = [a for a in argv if a.startswith("actor_rollout_ref.rollout.gpu_memory_utilization=")]
    assert util == ["actor_rollout_ref.rollout.gpu_memory_utilization=0.7"]
    assert argv[-1] == util[0]


def test_a_key_given_twice_is_refused() -> None:
    with pytest.raises(OverrideError, match="given twice"):
        parse_overrides(["trainer.total_epochs=1", "trainer.total_epochs=2"])


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"backend_args": ("data.train_batch_size=8",)}, "exceeds the 6 prompts"),
        ({"backend_args": ("actor_rollout_ref.rollout.n=1",)}, r"grpo needs .*rollout.n > 1"),
        ({"backend_args": ("trainer.n_gpus_per_node=3",)}, "not divisible by 3 GPUs"),
        (
            {"backend_args": ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3",)},
            "not a positive multiple of its micro batch",
        ),
        (
            {"backend_args": ("actor_rollout_ref.actor.ppo_mini_batch_size=8",)},
            "train_batch_size 4 < actor_rollout_ref.actor.ppo_mini_batch_size 8",
        ),
        (
            {"backend_args": ("actor_rollout_ref.rollout.log_prob_micro_batch_size=4",)},
            "exactly one of actor_rollout_ref.rollout.log_prob_micro_batch_size",
        ),
        (
            {"backend_args": ("actor_rollout_ref.rollout.tensor_model_parallel_size=2",)},
            "multiple of the rollout's tensor parallelism",
        ),
        ({"backend_args": ("trainer.save_freq=-1",)}, "adapter comes from a checkpoint"),
        ({"backend_args": ("actor_rollout_ref.model.lora_rank=0",)}, "lora_rank > 0"),
        ({"backend_args": ("trainer.total_training_steps=0",)}, "0 optimiser steps"),
        ({"backend_args": ("data.train_max_samples=2",)}, "exceeds the 2 prompts"),
    ],
)
def test_impossible_batch_arithmetic_is_refused(kw: dict[str, object], match: str) -> None:
    with pytest.raises(OverrideError, match=match):
        _argv("grpo", **kw)


def test_ppo_checks_the_critics_batches_too() -> None:
    with pytest.raises(OverrideError, match="critic: the mini batch per GPU"):
        _argv("ppo", backend_args=("critic.ppo_micro_batch_size_per_gpu=3",))


def test_steps_follow_verls_formula() -> None:
    # 6 prompts, batch 4: one step per epoch (drop-last), so 4 steps need 4 epochs
    argv, steps, _ = _argv("grpo", rows=6)
    assert "trainer.total_epochs=4" in argv and steps == 4
    # total_training_steps caps it; epochs x steps per epoch caps it too
    assert _argv("grpo", rows=6, backend_args=("trainer.total_training_steps=2",))[1] == 2
    one_epoch = ("trainer.total_epochs=1", "trainer.save_freq=1")
    assert _argv("grpo", rows=6, backend_args=one_epoch)[1] == 1
    # ended by its epochs before total_training_steps, on no save_freq step: no checkpoint
    with pytest.raises(OverrideError, match="would save no checkpoint"):
        _argv("grpo", rows=6, backend_args=("trainer.total_epochs=1",))
    # a batch larger than the dataset is sized down to it
    argv, steps, _ = _argv("grpo", rows=3, batch_size=16)
    assert "data.train_batch_size=3" in argv and steps == 4
