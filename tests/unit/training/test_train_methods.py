"""Methods gspo and ppo beside sft/dpo/grpo: the builtin backend's TRL config per method
(GSPO = GRPOTrainer with sequence-level importance ratios; PPO refused with the reason),
misspelled TRL fields refused, the budget formula and the curator's next steps."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rlstream.curation.next_steps import _commands
from rlstream.errors import ConfigError
from rlstream.launch.budget import estimate_run, planned_steps
from rlstream.training.config import METHOD_DEFAULTS, RL_METHODS, TrainConfig
from rlstream.training.data import METHOD_FILES

pytestmark = pytest.mark.unit

OUT = Path("/runs/r1")


def _kwargs(method: str, **kw: object) -> dict[str, object]:
    pytest.importorskip("trl")
    from rlstream.training.builtin.trl_args import trl_kwargs

    cfg = TrainConfig.model_validate({"method": method, "batch_size": 4, "num_generations": 2} | kw)
    return trl_kwargs(cfg, OUT, "cpu", bf16=False)


def test_gspo_and_ppo_are_methods_on_the_grpo_rows() -> None:
    assert RL_METHODS == ("grpo", "gspo", "ppo")
    assert METHOD_FILES["gspo"] == METHOD_FILES["ppo"] == "grpo.jsonl"
    assert METHOD_DEFAULTS["gspo"]["beta"] == 0.0 and METHOD_DEFAULTS["ppo"]["beta"] == 0.01


def test_builtin_gspo_is_grpo_with_sequence_level_ratios() -> None:
    grpo, gspo = _kwargs("grpo"), _kwargs("gspo")
    added = {k: v for k, v in gspo.items() if grpo.get(k, object()) != v}
    assert added == {
        "importance_sampling_level": "sequence",
        "loss_type": "grpo",
        "epsilon": 3e-4,
        "epsilon_high": 4e-4,
        "steps_per_generation": 4,
    }
    assert _kwargs("gspo", gradient_accumulation_steps=2)["steps_per_generation"] == 8
    # a --backend-arg still wins (e.g. the token level, for an A/B on the same batch)
    token = _kwargs("gspo", backend_args=("--importance_sampling_level=token",))
    assert token["importance_sampling_level"] == "token"


def test_builtin_refuses_ppo_with_the_reason() -> None:
    with pytest.raises(ConfigError, match=r"reward \*model\*.*--backend openrlhf"):
        _kwargs("ppo")


def test_misspelled_trl_field_is_refused() -> None:
    with pytest.raises(ConfigError, match="has no importance_sampling_levle"):
        _kwargs("gspo", backend_args=("--importance_sampling_levle=sequence",))


def _cfg(method: str, **kw: object) -> TrainConfig:
    base = {"method": method, "max_steps": 10, "batch_size": 4, "num_generations": 4}
    return TrainConfig.model_validate(base | {"max_new_tokens": 64} | kw)


HW = {"params": 1e9, "gpu_peak_tflops": 100.0, "mfu": 0.5}


def test_budget_knows_gspo_and_ppo() -> None:
    grpo = estimate_run(_cfg("grpo"), backend="builtin", rows=3, **HW)
    gspo = estimate_run(_cfg("gspo"), backend="builtin", rows=3, **HW)
    ppo = estimate_run(_cfg("ppo"), backend="openrlhf", rows=10, **HW)
    assert gspo.flops == grpo.flops == 8e9 * 40 * (256 + 64) + 2e9 * 40 * 64 * 3
    # openrlhf PPO: one sample per prompt (4 prompts a step); policy + reference + critic
    assert planned_steps(_cfg("ppo"), "openrlhf", 10) == (math.ceil(10 / 2) * 2, 4)
    assert ppo.sequences == 10 * 4
    assert ppo.flops == 16e9 * 40 * (256 + 64) + 2e9 * 40 * 64 * 3
    assert planned_steps(_cfg("gspo"), "openrlhf", 10) == (10, 16)


def test_next_steps_offer_gspo_and_ppo_only_with_grpo_rows() -> None:
    with_grpo = _commands("grpo", {"grpo.jsonl": 5, "dpo.jsonl": 2})
    assert "rlstream train --dataset . --method gspo" in with_grpo
    assert "rlstream train --dataset . --method ppo --backend openrlhf" in with_grpo
    without = _commands("dpo", {"grpo.jsonl": 0, "dpo.jsonl": 2})
    assert "gspo" not in without and "ppo" not in without
