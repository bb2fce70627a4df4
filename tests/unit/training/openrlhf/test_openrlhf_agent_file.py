"""The generated OpenRLHF agent file (multi-turn GRPO in an environment): the pinned
release's loader accepts it, its executor plays whole episodes against a scripted async
``llm_engine.generate``, and it is total on hostile input. Run under OpenRLHF 0.11.2's own
``utils/agent.py`` (from the real wheel) and under a minimal fake of that module."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
import torch
from _helpers_openrlhf import (
    AGENT_SOURCES,
    CONFIG_MODULE,
    install_real_agent_module,
    run_real_cli,
    uninstall_openrlhf,
)

from rlstream.environments import StepResult, register, unregister
from rlstream.environments.openrlhf_agent import LOG_KEYS, task_label
from rlstream.environments.orders import TASKS
from rlstream.training.config import TrainConfig
from rlstream.training.openrlhf import agent_file
from rlstream.training.openrlhf.extract import source_from_wheel
from rlstream.training.openrlhf.flags import parse_args
from rlstream.training.openrlhf.multiturn import grpo_env
from rlstream.training.openrlhf.pin import OPENRLHF_VERSION
from rlstream.training.openrlhf.prepare import prepare
from rlstream.training.openrlhf.wheel import fetch_wheel
from rlstream.transcript import Message
from rlstream_testkit.paths import cache_dir

pytestmark = pytest.mark.unit
EOS = "<|im_end|>"
CANCEL = '```json\n{"name": "cancel_order", "arguments": {"order_id": "A-1001", "reason": "no_longer_needed"}}\n```'
FAKE_AGENT = '''
from abc import ABC, abstractmethod


class AgentExecutorBase(ABC):
    @abstractmethod
    async def execute(self, prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine, images=None):
        raise NotImplementedError


class AgentInstanceBase(ABC):
    @abstractmethod
    def __init__(self, *args, **kwargs):
        pass

    async def reset(self, states, **kwargs):
        return states

    @abstractmethod
    async def step(self, state_dict, **kwargs):
        raise NotImplementedError


class MultiTurnAgentExecutor(AgentExecutorBase):
    """The 0.11.2 loop, reduced: reset, then generate / step / append feedback until done."""

    def __init__(self, agent_instance_cls):
        assert issubclass(agent_instance_cls, AgentInstanceBase)
        self.agent_instance_cls = agent_instance_cls

    async def execute(self, prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine, images=None):
        agent = self.agent_instance_cls()
        obs = (await agent.reset({"observation": prompt, "label": label}))["observation"]
        tokens = hf_tokenizer(text=obs, add_special_tokens=False, return_tensors="pt")["input_ids"][0].tolist()
        total, ranges, logs, scores = 0, [], {}, 0
        while max_length - len(tokens) > 0:
            out = (await llm_engine.generate(tokens, sampling_params)).outputs[0]
            ranges.append((len(tokens), len(tokens) + len(out.token_ids)))
            step = await agent.step({"observation_text": obs, "action_text": out.text, "label": label, "sampling_params": sampling_params})
            total += step["rewards"].item()
            scores = step.get("scores", total)
            logs = step.get("extra_logs", {})
            fb = hf_tokenizer(text=step["environment_feedback"], add_special_tokens=False, return_tensors="pt")["input_ids"][0].tolist()
            obs = obs + out.text + step["environment_feedback"]
            tokens = tokens + list(out.token_ids) + fb
            if step["done"]:
                break
        return {"reward": total, "scores": scores, "observation_tokens": tokens, "action_ranges": ranges, "extra_logs": logs}
'''


@pytest.fixture(scope="module")
def wheel() -> Path:
    return fetch_wheel(OPENRLHF_VERSION, cache_dir() / "openrlhf")


@pytest.fixture(params=["real", "fake"])
def openrlhf_agent(request: pytest.FixtureRequest, wheel: Path) -> Iterator[Any]:
    """``openrlhf.utils.agent``: the pinned release's own source, or a minimal fake."""
    if request.param == "real":
        yield install_real_agent_module({p: source_from_wheel(wheel, p) for p in AGENT_SOURCES})
    else:
        for pkg in ("openrlhf", "openrlhf.utils"):
            sys.modules[pkg] = types.ModuleType(pkg)
        module = types.ModuleType("openrlhf.utils.agent")
        exec(compile(FAKE_AGENT, "fake_agent.py", "exec"), module.__dict__)
        sys.modules["openrlhf.utils.agent"] = module
        yield module
    uninstall_openrlhf()


class CharTok:
    """An HF tokenizer as OpenRLHF calls it: one id per character, <|im_end|> one id."""

    eos_token = EOS

    def apply_chat_template(
        self, messages: list[dict[str, Any]], tokenize: bool, add_generation_prompt: bool
    ) -> str:
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}{EOS}\n" for m in messages)
        return text + ("<|im_start|>assistant\n" if add_generation_prompt else "")

    def __call__(self, text: str, add_special_tokens: bool, return_tensors: str) -> Any:
        ids = [1 if i else 0 for i in range(0)]
        for i, part in enumerate(text.split(EOS)):
            ids += ([1] if i else []) + [ord(c) + 1000 for c in part]
        return {"input_ids": torch.tensor([ids], dtype=torch.long)}


class Engine:
    """Scripted vLLM: each generate() returns the next turn (token ids and text)."""

    def __init__(self, turns: list[str]) -> None:
        self.turns = iter(turns)

    async def generate(
        self, token_ids: list[int], params: Any, multi_modal_data: Any = None
    ) -> Any:
        text = next(self.turns, "nothing more")
        ids = [ord(c) + 1000 for c in text] + [1]
        out = SimpleNamespace(token_ids=ids, text=text, finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[out])


def _cfg(**kw: Any) -> TrainConfig:
    base: dict[str, Any] = {
        "method": "grpo", "max_steps": 2, "batch_size": 2, "num_generations": 2,
        "learning_rate": 1e-6, "beta": 0.0, "max_new_tokens": 64, "max_turns": 3,
        "environment": "python", "max_length": 4096,
    }  # fmt: skip
    return TrainConfig(**{**base, **kw})


def _planned(
    tmp_path: Path, cfg: TrainConfig, tasks: list[dict[str, Any]]
) -> tuple[Path, list[dict[str, Any]]]:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "grpo.jsonl").write_bytes(b"".join(orjson.dumps({"task": t}) + b"\n" for t in tasks))
    plan = grpo_env(data, "ds", "/m", cfg, tmp_path / "out")
    for path, body in plan.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    work = tmp_path / "out" / "openrlhf"
    rows = [orjson.loads(line) for line in (work / "prompts.jsonl").read_bytes().splitlines()]
    return work / agent_file.FILE_NAME, rows


_LOADED: dict[str, Any] = {}


def _load(path: Path) -> Any:
    """As OpenRLHF 0.11.2's vllm_engine._load_agent_executor does."""
    spec = importlib.util.spec_from_file_location("agent_module", str(path))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    base = sys.modules["openrlhf.utils.agent"].AgentExecutorBase
    assert issubclass(module.AgentExecutor, base)
    _LOADED["module"] = module
    return module.AgentExecutor()


def _run(executor: Any, prompt: str, label: Any, turns: list[str]) -> dict[str, Any]:
    params = SimpleNamespace(max_tokens=64, logprobs=None)
    result: dict[str, Any] = asyncio.run(
        executor.execute(prompt, label, params, 4096, CharTok(), Engine(turns))
    )
    return result


def _prompt(row: dict[str, Any]) -> str:
    return CharTok().apply_chat_template(row["prompt"], False, True)


def test_an_episode_earns_the_environments_reward(openrlhf_agent: Any, tmp_path: Path) -> None:
    path, rows = _planned(tmp_path, _cfg(), TASKS[:2])
    executor = _load(path)
    ok = _run(executor, _prompt(rows[0]), rows[0]["label"], [CANCEL, "Done."])
    assert ok["reward"] == pytest.approx(1.0) and ok["scores"] == 1.0
    assert len(ok["action_ranges"]) == 2
    assert ok["extra_logs"] == {
        **dict.fromkeys(LOG_KEYS, 0.0),
        "rlstream_env_success": 1.0,
        "rlstream_env_turns": 2.0,
    }
    text = "".join(chr(i - 1000) if i > 1 else EOS for i in ok["observation_tokens"])
    assert '<|im_start|>tool\n{"cancel_reason":"no_longer_needed"' in text
    wrong = _run(
        executor, _prompt(rows[1]), rows[1]["label"], [CANCEL, "Done."]
    )  # task 2 is a refund
    assert (
        wrong["reward"] == pytest.approx(0.0) and wrong["extra_logs"]["rlstream_env_errors"] == 0.0
    )
    look = '```json\n{"name": "get_order", "arguments": {"order_id": "A-1001"}}\n```'
    capped = _run(executor, _prompt(rows[0]), rows[0]["label"], [look] * 5)
    assert len(capped["action_ranges"]) == 3 and capped["reward"] == 0.0  # max_turns
    assert capped["extra_logs"]["rlstream_env_turns"] == 3.0


class _Boom:
    def __init__(self, **_: Any) -> None:
        pass

    def reset(self, task: Any) -> Any:
        return [Message(role="user", content="hi")], []

    def step(self, message: Message) -> StepResult:
        raise RuntimeError("environment bug")


def test_total_on_hostile_labels_environments_and_states(
    openrlhf_agent: Any, tmp_path: Path
) -> None:
    path, rows = _planned(tmp_path, _cfg(), TASKS[:1])
    executor = _load(path)
    prompt = _prompt(rows[0])
    for label in (
        "{oops",
        None,
        '{"format": "other"}',
        task_label({"task_id": "x", "actions": "bad"}),
    ):
        out = _run(executor, prompt, label, [CANCEL])
        assert out["reward"] == 0.0 and out["extra_logs"]["rlstream_env_errors"] == 1.0
    register("boom", _Boom)
    try:
        boom = tmp_path / "boom.py"
        boom.write_bytes(agent_file.render("boom", {}, 3, 5.0))
        out = _run(_load(boom), prompt, task_label({"task_id": "b"}), [CANCEL])
        assert out["reward"] == 0.0 and out["extra_logs"]["rlstream_env_errors"] == 1.0
    finally:
        unregister("boom")
    inst = _LOADED["module"].AgentInstance()
    assert asyncio.run(inst.reset(None)) == {"observation": ""}
    for state in (None, {}, {"action_text": 42}):
        got = asyncio.run(inst.step(state))
        assert got["done"] is True and got["rewards"].item() == 0.0


def test_the_plan_names_the_agent_file_and_the_release_accepts_it(
    wheel: Path, tmp_path: Path
) -> None:
    cfg = _cfg()
    _planned(tmp_path, cfg, TASKS)
    plan = grpo_env(tmp_path / "data", "ds", "/m", cfg, tmp_path / "out")
    agent = str(tmp_path / "out" / "openrlhf" / agent_file.FILE_NAME)
    argv = plan.argv[3:]
    assert "--reward.remote_url" not in argv
    assert argv[argv.index("--train.agent_func_path") + 1] == agent
    assert argv[argv.index("--rollout.max_new_tokens") + 1] == str(64 * 3)
    parse_args(argv)  # every flag in the pinned manifest
    source, config = source_from_wheel(wheel), source_from_wheel(wheel, CONFIG_MODULE)
    args = run_real_cli(source, config, argv)
    assert args.train.agent_func_path == agent and args.reward.remote_url == ["agent"]
    assert plan.summary["multi_turn"] is True and plan.summary["prompts"] == len(TASKS)
    assert plan.sha256[agent_file.FILE_NAME] == plan.inputs[Path(agent)]
    assert agent_file.render("python", {}, 3, 30.0) == agent_file.render("python", {}, 3, 30.0)


def test_curated_rows_plan_replay_episodes_on_tau_bench_logs(tmp_path: Path) -> None:
    """A curated grpo.jsonl row (a JSON label and its task_key) becomes a replay task over
    third-party logs (tau-bench slice, MIT); a key the logs lack is skipped, said why."""
    logs = Path(__file__).parents[3] / "golden" / "tau_bench" / "gpt-4o-airline.slice.jsonl"
    data = tmp_path / "data"
    data.mkdir()
    keys = ["task_id:12", "task_id:38", "task_id:9", "task_id:404"]
    rows = [{"label": '{"reward_spec": "outcome"}', "task_key": k} for k in keys]
    (data / "grpo.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    cfg = _cfg(environment="replay", environment_options={"logs": str(logs)})
    plan = grpo_env(data, "ds", "/m", cfg, tmp_path / "out")
    assert plan.summary["prompts"] == 3
    assert list(plan.summary["skipped_rows"].values()) == [1]
    assert "task_id:404" in next(iter(plan.summary["skipped_rows"]))
    body = plan.files[tmp_path / "out" / "openrlhf" / "prompts.jsonl"]
    planned = [orjson.loads(line) for line in body.splitlines()]
    tasks = [orjson.loads(r["label"])["task"] for r in planned]
    assert [t["task_key"] for t in tasks] == keys[:3]
    assert planned[0]["prompt"][0]["content"].startswith("# Airline Agent Policy")


def test_prepare_takes_the_environment_path(maths_dataset: Path, tmp_path: Path) -> None:
    """prepare() on a curated dataset with an environment plans the agent file, not the
    reward file (each row's JSON label is its task)."""
    plan = prepare(maths_dataset, "/m", "grpo", _cfg(), tmp_path)
    names = {p.name for p in plan.files}
    assert names == {"prompts.jsonl", agent_file.FILE_NAME}
    assert plan.summary["multi_turn"] and plan.summary["environment"] == "python"
