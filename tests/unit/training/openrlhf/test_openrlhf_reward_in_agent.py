"""The generated reward file inside OpenRLHF 0.11.2's own rollout code, from the real wheel:
``utils/agent.py``'s SingleTurnAgentExecutor loads it (spec_from_file_location), runs a
generation through a char-level tokenizer and a scripted engine, calls it the way it does
(one sample, in a thread) and fills reward/scores/extra_logs, which the trainer then wraps
as ``torch.tensor([v])`` (``samples_generator.py``). A None reward there would mean a silent
hole in the batch; here every sample gets a number."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
import torch
from _helpers_openrlhf import (
    AGENT_SOURCES,
    Cfg,
    install_real_agent_module,
    uninstall_openrlhf,
)

from rlstream.training.openrlhf.extract import source_from_wheel
from rlstream.training.openrlhf.pin import OPENRLHF_VERSION
from rlstream.training.openrlhf.prepare import prepare
from rlstream.training.openrlhf.wheel import fetch_wheel
from rlstream_testkit.paths import cache_dir

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def agent_module() -> Iterator[Any]:
    wheel = fetch_wheel(OPENRLHF_VERSION, cache_dir() / "openrlhf")
    sources = {path: source_from_wheel(wheel, path) for path in AGENT_SOURCES}
    try:
        yield install_real_agent_module(sources)
    finally:
        uninstall_openrlhf()


class _CharTokenizer:
    def __call__(self, text: str, add_special_tokens: bool, return_tensors: str) -> Any:
        return {"input_ids": torch.tensor([[ord(c) for c in text]])}

    def decode(self, ids: list[int], skip_special_tokens: bool) -> str:
        return "".join(chr(i) for i in ids)


class _Engine:
    """Generates a scripted completion (what vLLM would sample)."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def generate(
        self, token_ids: list[int], params: Any, multi_modal_data: Any = None
    ) -> Any:
        out = SimpleNamespace(
            token_ids=[ord(c) for c in self.text], finish_reason="stop", logprobs=None
        )
        return SimpleNamespace(outputs=[out])


@pytest.fixture(scope="module")
def planned(
    maths_dataset: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("run")
    plan = prepare(maths_dataset, "/m", "grpo", Cfg(), out)
    for path, data in plan.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    row = orjson.loads((out / "openrlhf" / "prompts.jsonl").read_bytes().splitlines()[0])
    return out / "openrlhf" / "reward_func.py", row


def _rollout(agent: Any, reward_path: Path, label: Any, completion: str) -> dict[str, Any]:
    executor = agent.SingleTurnAgentExecutor(remote_rm_url=[str(reward_path)])
    assert executor.reward_func is not None  # loaded from our file, as in the GPU image
    prompt = "<|im_start|>user\nWhat is it?<|im_end|>\n<|im_start|>assistant\n"
    params = SimpleNamespace(max_tokens=64, logprobs=None)
    result: dict[str, Any] = asyncio.run(
        executor.execute(prompt, label, params, 512, _CharTokenizer(), _Engine(completion))
    )
    return result


def _as_trainer_sees_it(output: dict[str, Any]) -> dict[str, torch.Tensor]:
    """samples_generator.py 0.11.2 ``_process_response_into_experience``: reward/score and
    every extra_logs value become ``torch.tensor([v])``."""
    info = {"reward": torch.tensor([output["reward"]]), "score": torch.tensor([output["scores"]])}
    for key, value in output["extra_logs"].items():
        if isinstance(value, torch.Tensor):
            value = value.flatten()[0].item()
        info[key] = torch.tensor([value])
    return info


@pytest.mark.parametrize(
    ("completion", "label_of", "reward", "errors"),
    [
        ("It is {gold}.<|im_end|>", "good", 1.0, 0.0),
        ("It is 0.<|im_end|>", "good", 0.0, 0.0),
        ("It is {gold}.<|im_end|>", "not json", -1.0, 1.0),
        ("It is {gold}.<|im_end|>", "none", -1.0, 1.0),
    ],
)
def test_openrlhfs_executor_gets_a_number_for_every_sample(
    agent_module: Any,
    planned: tuple[Path, dict[str, Any]],
    completion: str,
    label_of: str,
    reward: float,
    errors: float,
) -> None:
    path, row = planned
    gold = orjson.loads(row["label"])["context"]["label"].split()[-1]
    label = {"good": row["label"], "not json": "{oops", "none": None}[label_of]
    output = _rollout(agent_module, path, label, completion.format(gold=gold))
    assert output["reward"] is not None  # OpenRLHF leaves None when a reward func raises
    info = _as_trainer_sees_it(output)
    assert info["reward"].shape == (1,) and info["reward"].item() == reward
    assert info["score"].item() == max(reward, 0.0)
    assert info["rlstream_reward_errors"].item() == errors
