"""Builders for the OpenRLHF adapter tests: a real curated GRPO dataset (gsm8k-graded
maths groups) and a stand-in for TrainConfig."""

from __future__ import annotations

import ast
import importlib.machinery
import random
import sys
import types
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rlstream.curation import curate, write_dataset
from rlstream.grading import GradeFailure, RewardSpec, grade_many
from rlstream.transcript import Message, Transcript

TASKS = 6


def maths_transcripts(tasks: int = TASKS, n: int = 4) -> list[Transcript]:
    """``tasks`` prompts x ``n`` rollouts, half right (gold #### a*b), all distinct text."""
    rng = random.Random(7)
    out = []
    for task in range(tasks):
        a, b = 3 + task, 7 + 2 * task
        for i in range(n):
            answer = a * b if i % 2 == 0 else a * b + 1 + i
            filler = " ".join(rng.choice(["so", "then", "thus", "hence", "next"]) for _ in range(5))
            out.append(
                Transcript(
                    conversation_id=f"t{task}-r{i}",
                    agent="math-tutor",
                    label=f"#### {a * b}",
                    task_key=f"t{task}",
                    messages=(
                        Message(role="system", content="Answer with the number."),
                        Message(role="user", content=f"What is {a} times {b}?"),
                        Message(role="assistant", content=f"{filler}: the answer is {answer}."),
                    ),
                )
            )
    return out


def write_maths_dataset(out: Path, tasks: int = TASKS, second_spec: str | None = None) -> Path:
    """Graded with gsm8k; with ``second_spec``, the second half of the tasks with that."""
    transcripts = maths_transcripts(tasks)
    half = len(transcripts) // 2 if second_spec else len(transcripts)
    graded = list(grade_many(transcripts[:half], RewardSpec.parse("gsm8k")))
    if second_spec:
        graded += grade_many(transcripts[half:], RewardSpec.parse(second_spec))
    write_dataset(curate([r for r in graded if not isinstance(r, GradeFailure)]), out)
    return out


@dataclass(frozen=True)
class Cfg:
    """Stands in for TrainConfig with the fields the backend reads."""

    method: str = "grpo"
    max_steps: int = 4
    learning_rate: float = 1e-6
    batch_size: int = 4
    gradient_accumulation_steps: int = 1
    max_length: int = 1024
    lora_rank: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.0
    temperature: float = 1.0
    beta: float = 0.0
    seed: int = 7
    num_generations: int = 4
    max_new_tokens: int = 128
    backend_args: tuple[str, ...] = field(default_factory=tuple)

    def with_(self, **kw: object) -> Cfg:
        return replace(self, **kw)  # type: ignore[arg-type]


# -- running the pinned release's own CLI source (its parser and startup asserts) ---------
STUBBED = ("ray", "openrlhf", "modelscope")


class _Stub(types.ModuleType):
    """Any attribute of a stubbed module is a callable that does nothing."""

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None


class StubFinder:
    """Imports of ray / openrlhf (CUDA-only) resolve to stubs while the CLI source runs."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name.split(".")[0] in STUBBED:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        return _Stub(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def _capture_instead_of_train(source: str) -> ast.Module:
    """The CLI module with its final ``train(args)`` replaced by ``CAPTURED.append(args)``:
    everything before it (parse_args, hierarchize, every startup assert) runs for real."""
    tree = ast.parse(source)
    main = tree.body[-1]
    assert isinstance(main, ast.If) and isinstance(main.body[-1], ast.Expr)
    call = main.body[-1].value
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
    assert call.func.id == "train"
    main.body[-1] = ast.parse("CAPTURED.append(args)").body[0]
    return ast.fix_missing_locations(tree)


CONFIG_MODULE = "openrlhf/utils/config.py"


def run_real_cli(source: str, config_source: str, argv: list[str]) -> Any:
    """Parse ``argv`` (without ``python -m module``) with the release's own CLI code and its
    own ``hierarchize`` (``config_source``); returns the hierarchised args, or raises
    SystemExit (argparse) / AssertionError (its startup checks)."""
    code = compile(_capture_instead_of_train(source), "train_ppo_ray.py", "exec")
    finder = StubFinder()
    sys.meta_path.insert(0, finder)
    saved_argv = sys.argv
    captured: list[Any] = []
    try:
        config = types.ModuleType("openrlhf.utils.config")
        exec(compile(config_source, CONFIG_MODULE, "exec"), config.__dict__)
        sys.modules["openrlhf.utils.config"] = config
        sys.argv = ["train_ppo_ray.py", *argv]
        exec(code, {"__name__": "__main__", "CAPTURED": captured})
    finally:
        sys.argv = saved_argv
        sys.meta_path.remove(finder)
        for m in [m for m in sys.modules if m.split(".")[0] in STUBBED]:
            del sys.modules[m]
    return captured[0]


# -- OpenRLHF's own agent module (utils/agent.py) from the real wheel -----------------------
AGENT_SOURCES = ("openrlhf/utils/logging_utils.py", "openrlhf/utils/agent.py")


class _AiohttpStub:
    """aiohttp (HTTP reward servers: unused by agent and reward files) resolves to a stub."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name.split(".")[0] == "aiohttp":
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        return types.ModuleType(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def install_real_agent_module(sources: dict[str, str]) -> Any:
    """Install ``openrlhf.utils.agent`` (and its logging module) from the wheel's sources;
    :func:`uninstall_openrlhf` undoes it."""
    sys.meta_path.insert(0, _AiohttpStub())
    for pkg in ("openrlhf", "openrlhf.utils"):
        sys.modules[pkg] = types.ModuleType(pkg)
    for path in AGENT_SOURCES:
        name = path.removesuffix(".py").replace("/", ".")
        module = types.ModuleType(name)
        sys.modules[name] = module
        exec(compile(sources[path], path, "exec"), module.__dict__)
    return sys.modules["openrlhf.utils.agent"]


def uninstall_openrlhf() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _AiohttpStub)]
    for name in [m for m in sys.modules if m.split(".")[0] in ("openrlhf", "aiohttp")]:
        del sys.modules[name]
