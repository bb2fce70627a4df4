"""The TRL rollout hook over environments, with a character tokenizer and a scripted model:
the model's tokens carry the loss (env_mask 1), the environment's answer is masked (0) and
is exactly what the chat template renders between the turns; the reward is the episode's;
a hostile environment is a 0.0 reward, never an exception out of the hook."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
import torch

from rlstream.environments import (
    PythonEnvironment,
    ReplayEnvironment,
    StepResult,
    register,
    unregister,
)
from rlstream.environments.orders import TASKS
from rlstream.environments.render import message_dict
from rlstream.environments.trl_adapter import EpisodeRollout, environment_reward
from rlstream.errors import ConfigError
from rlstream.training.builtin.multiturn import environment_rows, task_of
from rlstream.training.config import TrainConfig
from rlstream.transcript import Message

pytestmark = pytest.mark.unit
EOS, EOS_ID = "<|im_end|>", 1
CANCEL = '```json\n{"name": "cancel_order", "arguments": {"order_id": "A-1001", "reason": "no_longer_needed"}}\n```'


class CharTok:
    """ChatML rendering; one id per character (+1000) and one for <|im_end|>."""

    eos_token, eos_token_id = EOS, EOS_ID

    def apply_chat_template(
        self, messages: list[dict[str, Any]], tokenize: bool, add_generation_prompt: bool
    ) -> str:
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}{EOS}\n" for m in messages)
        return text + ("<|im_start|>assistant\n" if add_generation_prompt else "")

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        out: list[int] = []
        for i, part in enumerate(text.split(EOS)):
            if i:
                out.append(EOS_ID)
            out += [ord(c) + 1000 for c in part]
        return out

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return "".join(
            "" if i == EOS_ID and skip_special_tokens else EOS if i == EOS_ID else chr(i - 1000)
            for i in ids
        )


class ScriptedModel:
    """generate() appends the next scripted turn (+ EOS + junk a real model may add)."""

    device = "cpu"

    def __init__(self, turns: list[str]) -> None:
        self.turns: Iterator[str] = iter(turns * 10)
        self.tok = CharTok()
        self.budgets: list[int] = []

    def generate(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, generation_config: Any
    ) -> torch.Tensor:
        self.budgets.append(generation_config.max_new_tokens)
        new = self.tok.encode(next(self.turns) + EOS + "junk")[: generation_config.max_new_tokens]
        return torch.cat([input_ids, torch.tensor([new])], dim=1)


def _trainer(turns: list[str], budget: int = 4000) -> Any:
    return SimpleNamespace(
        processing_class=CharTok(),
        model=ScriptedModel(turns),
        accelerator=SimpleNamespace(unwrap_model=lambda m: m),
        max_completion_length=budget,
        generation_config=SimpleNamespace(max_new_tokens=None),
    )


def _rollout(
    factory: Any, tasks: list[dict[str, Any]], turn_tokens: int = 500
) -> tuple[EpisodeRollout, list[Any]]:
    openings = []
    for t in tasks:
        msgs, _ = factory().reset(t)
        openings.append([message_dict(m) for m in msgs])
    r = EpisodeRollout(factory, tasks, openings, max_turns=4, turn_tokens=turn_tokens, timeout_s=5)
    return r, openings


def test_a_two_turn_episode_masks_the_environment_and_earns_its_reward() -> None:
    rollout, openings = _rollout(PythonEnvironment, [TASKS[0]])
    trainer = _trainer([CANCEL, "Done."])
    out = rollout([openings[0], openings[0]], trainer)
    tok = CharTok()
    assert out["logprobs"] is None and out["env_reward"] == [1.0, 1.0]
    assert out["env_status"] == ["done", "done"]
    ids, mask = out["completion_ids"][0], out["env_mask"][0]
    assert len(ids) == len(mask)
    model_text = tok.decode([i for i, m in zip(ids, mask, strict=True) if m])
    env_text = tok.decode([i for i, m in zip(ids, mask, strict=True) if not m])
    assert model_text == CANCEL + EOS + "Done." + EOS  # cut at EOS: the junk never enters
    assert env_text.startswith("\n<|im_start|>tool\n{") and env_text.endswith(
        f"{EOS}\n<|im_start|>assistant\n"
    )
    assert '"cancel_reason":"no_longer_needed"' in env_text
    assert tok.decode(out["prompt_ids"][0]) == tok.apply_chat_template(openings[0], False, True)
    assert rollout.stats.summary()["status"] == {"done": 2} and rollout.stats.successes == 2
    assert environment_reward([], [], out["env_reward"]) == [1.0, 1.0]


def test_the_token_budget_truncates_and_keeps_the_reward_so_far() -> None:
    rollout, openings = _rollout(PythonEnvironment, [TASKS[0]])
    out = rollout([openings[0]], _trainer([CANCEL, "Done."], budget=len(CANCEL) + 5))
    assert out["env_status"] == ["truncated"] and out["env_reward"] == [1.0]
    assert sum(out["env_mask"][0]) == len(CANCEL) + 1 == len(out["completion_ids"][0])


def test_per_turn_cap_reaches_generate() -> None:
    rollout, openings = _rollout(PythonEnvironment, [TASKS[2]], turn_tokens=7)
    trainer = _trainer(["What order?"])
    rollout([openings[0]], trainer)
    assert trainer.model.budgets[0] == 7


class _Boom:
    def reset(self, task: Any) -> Any:
        return [Message(role="user", content=str(task["task_id"]))], []

    def step(self, message: Message) -> StepResult:
        raise RuntimeError("environment bug")


def test_a_hostile_environment_is_a_zero_reward_not_a_crash() -> None:
    tasks = [{"task_id": "a"}, {"task_id": "b"}]
    rollout, openings = _rollout(_Boom, tasks)
    out = rollout(openings, _trainer(["hi"]))
    assert out["env_reward"] == [0.0, 0.0] and out["env_status"] == ["error", "error"]
    assert "environment bug" in (rollout.stats.last_error or "")


def test_openings_route_prompts_and_duplicates_are_refused() -> None:
    with pytest.raises(ConfigError, match="same messages"):
        _rollout(_Boom, [{"task_id": "a", "x": 1}, {"task_id": "a", "x": 2}])
    rollout, _ = _rollout(_Boom, [{"task_id": "a"}])
    with pytest.raises(ConfigError, match="matches no environment task"):
        rollout([[{"role": "user", "content": "zzz"}]], _trainer(["hi"]))


def test_rows_become_tasks_and_failing_resets_are_skipped() -> None:
    assert task_of({"task": {"a": 1}}) == {"a": 1}
    assert task_of({"label": '{"b": 2}'}) == {"b": 2}
    assert task_of({"label": "not json"}) is None and task_of({"label": "[1]"}) is None
    register("orders-test", PythonEnvironment)
    try:
        cfg = TrainConfig(method="grpo", environment="orders-test")
        bad = {"task": {"instruction": "x", "actions": [{"name": "nope"}]}}
        rows, _, skipped = environment_rows(cfg, [{"task": TASKS[0]}, bad, {"label": "zz"}])
        assert len(rows) == 1 and rows[0]["prompt"][1]["content"] == TASKS[0]["instruction"]
        assert sum(skipped.values()) == 2 and any("reset failed" in k for k in skipped)
        with pytest.raises(ConfigError, match="no environment task"):
            environment_rows(cfg, [bad])
    finally:
        unregister("orders-test")


def test_a_factory_that_raises_fails_its_episode_not_the_run() -> None:
    rollout, openings = _rollout(_Boom, [{"task_id": "a"}])

    def flaky() -> Any:
        raise OSError("disk gone")

    rollout.factory = flaky
    out = rollout([openings[0], openings[0]], _trainer(["hi"]))
    assert out["env_status"] == ["error", "error"] and out["env_reward"] == [0.0, 0.0]
    assert out["env_mask"] == [[0], [0]] and out["completion_ids"] == [[EOS_ID], [EOS_ID]]
    assert CharTok().decode(out["prompt_ids"][0]).startswith("<|im_start|>user\na<|im_end|>")
    assert rollout.stats.last_error == (
        "reset raised EnvironmentFailure: the environment could not be made: OSError: disk gone"
    )


def _as_text(m: Message) -> str:
    """A logged assistant turn as the model would write it (calls as fenced JSON)."""
    if not m.tool_calls:
        return m.content or ""
    c = m.tool_calls[0]
    return "```json\n" + orjson.dumps({"name": c.name, "arguments": c.arguments}).decode() + "\n```"


def test_replay_episodes_from_third_party_logs_mask_user_turns_too() -> None:
    """tau-bench slice (MIT): the model replays a logged conversation's turns (task 9: 30
    turns, tool calls and user turns, a failed task); the user's replayed turns and the
    tool results are environment tokens, and the reward is the logged outcome, 0.0."""
    logs = Path(__file__).parents[2] / "golden" / "tau_bench" / "gpt-4o-airline.slice.jsonl"
    env0 = ReplayEnvironment(logs=logs)
    group = env0._rollouts["task_id:9"]
    turns = [_as_text(m) for m in group[0].transcript.messages if m.role == "assistant"]
    rollout, openings = _rollout(
        lambda: ReplayEnvironment(rollouts=group), [{"task_key": "task_id:9"}], turn_tokens=10_000
    )
    rollout.max_turns = len(turns)
    out = rollout([openings[0]], _trainer(turns, budget=100_000))
    assert out["env_status"] == ["done"] and out["env_reward"] == [0.0]
    tok = CharTok()
    ids, mask = out["completion_ids"][0], out["env_mask"][0]
    env_text = tok.decode([i for i, m in zip(ids, mask, strict=True) if not m])
    assert env_text.count("<|im_start|>user\n") >= 1 and "<|im_start|>tool\n" in env_text
    model_text = tok.decode([i for i, m in zip(ids, mask, strict=True) if m])
    assert model_text == "".join(t + EOS for t in turns)
