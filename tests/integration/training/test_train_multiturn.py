"""Multi-turn GRPO on the builtin backend (CPU smoke): whole episodes in the ``python``
environment's orders domain, played by the small model through TRL's rollout hook.

Two steps, two episodes per step, short turns: it proves the wiring (episodes rolled out,
environment tokens masked, the environment's reward reaching the loss, an adapter saved),
not a gain; the 135M model rarely makes a valid call, which the reward then says.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import orjson
import pytest

from rlstream.environments.orders import TASKS
from rlstream.training import TrainConfig
from rlstream.training.builtin import BuiltinBackend

pytestmark = pytest.mark.train


def test_grpo_rolls_out_whole_episodes_in_the_python_environment(
    base_model: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"task": t} for t in TASKS[:2]] + [{"label": json.dumps(TASKS[2])}]
    (data / "grpo.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    config = TrainConfig(
        method="grpo",
        max_steps=2,
        batch_size=2,
        num_generations=2,
        max_new_tokens=12,
        max_turns=2,
        environment="python",
        device="cpu",
    )
    result = BuiltinBackend().train(data, base_model, config, tmp_path / "out")
    assert result.status == "succeeded", result.reason
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    env = metrics["environment"]
    assert env["name"] == "python" and env["episodes"] == 4  # 2 steps x 2 episodes
    assert sum(env["status"].values()) == 4 and "error" not in env["status"]
    assert 1 <= env["mean_turns"] <= 2
    losses = [p["loss"] for p in metrics["curve"] if "loss" in p]
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses)
    assert all("reward" in p for p in metrics["curve"])
    assert (tmp_path / "out" / "adapter" / "adapter_config.json").is_file()
