"""The environment form of evaluation: held-out tasks played as whole episodes, graded by
the environment, with the same paired statistics and gate as the next-action form."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from eval_helpers import BASE, CAND

from rlstream.environments import ReplayEnvironment, register, unregister
from rlstream.environments.base import StepResult
from rlstream.environments.orders import TASKS
from rlstream.evaluation import (
    EvalRequest,
    GateConfig,
    ModelRef,
    decide,
    run_evaluation,
    write_report,
)
from rlstream.evaluation.models import Decoding, EnvironmentSpec
from rlstream.evaluation.sampler import Advance, Generation, Messages
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message, ToolCall, Transcript

pytestmark = pytest.mark.unit


def _fence(name: str, args: dict[str, Any]) -> str:
    return "```json\n" + orjson.dumps({"name": name, "arguments": args}).decode() + "\n```"


class Agent:
    """A scripted policy: ``skilled`` makes each task's ground-truth call, then says so;
    otherwise it only ever apologises. Records every batch it is asked."""

    name = "agent"

    def __init__(self, skilled: bool) -> None:
        self.skilled = skilled
        self.batches: list[int] = []

    def _answer(self, msgs: Messages) -> str:
        if not self.skilled:
            return "Sorry, I cannot help with that."
        if msgs[-1]["role"] == "tool":
            return "Done: anything else?"
        ask = next(m["content"] for m in msgs if m["role"] == "user")
        task = next(t for t in TASKS if t["instruction"] == ask)
        return _fence(task["actions"][0]["name"], task["actions"][0]["arguments"])

    def generate(
        self, prompts: Sequence[Messages], decoding: Decoding, advance: Advance | None = None
    ) -> list[list[Generation]]:
        self.batches.append(len(prompts))
        return [[Generation(self._answer(p), 9, True)] * decoding.samples for p in prompts]

    def close(self) -> None:
        pass


def _heldout(tmp: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp / "heldout.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def _python_rows() -> list[dict[str, Any]]:
    return [
        {"task_key": t["task_id"], "prompt": [{"role": "user", "content": t["instruction"]}],
         "task": t}
        for t in TASKS
    ]  # fmt: skip


def _request(heldout: Path, env: EnvironmentSpec, k: int = 1) -> EvalRequest:
    return EvalRequest(
        baseline=BASE, candidate=CAND, heldout=heldout, reward_spec="outcome",
        decoding=Decoding(k=k, greedy=k == 1), environment=env,
    )  # fmt: skip


def _agents() -> dict[str, Agent]:
    return {"baseline": Agent(skilled=False), "candidate": Agent(skilled=True)}


def test_python_environment_grades_whole_episodes_by_final_state(tmp_path: Path) -> None:
    agents = _agents()
    # a turn-level file holds several prompts per task: played as episodes, once per task
    rows = _python_rows() + _python_rows()[:2]
    request = _request(_heldout(tmp_path, rows), EnvironmentSpec(name="python"), k=2)
    report = run_evaluation(request, sampler_factory=lambda ref: agents[ref.label])
    # the baseline never acts: only the read-only status task's state already matches
    assert report.baseline.pass_at_1 == pytest.approx(0.25)
    assert report.candidate.pass_at_1 == 1.0
    by_task = {p.task_key: p for p in report.prompts}
    assert [s.passed for s in by_task["status-1003"].baseline] == [True, True]
    assert not any(s.passed for s in by_task["cancel-1001"].baseline)
    assert all(s.attempted_call and s.graded for s in by_task["cancel-1001"].candidate)
    assert report.heldout["form"] == "environment" and report.heldout["prompts"] == 4
    assert len(report.prompts) == 4
    assert report.heldout["environment"] == {"name": "python", "max_turns": 8}
    # both of the candidate's turns per episode ran as batches over all 8 episodes
    assert agents["candidate"].batches == [8, 8]
    decision = decide(report, GateConfig(min_prompts=4))
    data = write_report(report, decision, tmp_path / "report")
    assert data["heldout"]["episodes"]["candidate"] == {"graded": 8}
    md = (tmp_path / "report" / "report.md").read_text()
    assert "Form: **environment** `python`" in md and "candidate: 8 graded" in md


class Hostile:
    """Raises on the first step of every episode."""

    def reset(self, task: Any) -> tuple[list[Message], list[dict[str, Any]]]:
        return [Message(role="user", content=TASKS[0]["instruction"])], []

    def step(self, message: Message) -> StepResult:
        raise RuntimeError("simulator crashed")


@pytest.fixture
def hostile() -> Iterator[str]:
    register("hostile-eval", Hostile)
    yield "hostile-eval"
    unregister("hostile-eval")


def test_a_crashing_environment_is_a_graded_failure_not_a_crashed_evaluation(
    tmp_path: Path, hostile: str
) -> None:
    agents = _agents()
    request = _request(_heldout(tmp_path, _python_rows()), EnvironmentSpec(name=hostile))
    report = run_evaluation(request, sampler_factory=lambda ref: agents[ref.label])
    samples = [s for p in report.prompts for s in (*p.baseline, *p.candidate)]
    assert len(samples) == 8 and not any(s.passed for s in samples)
    assert all(s.graded and "simulator crashed" in (s.reason or "") for s in samples)
    assert report.heldout["episodes"]["candidate"] == {"environment_failure": 4}


def _logged(task: str, i: int, passed: bool, name: str) -> ScoredRollout:
    args = TASKS[0]["actions"][0]["arguments"]
    msgs = (
        Message(role="user", content=TASKS[0]["instruction"]),
        Message(role="assistant", tool_calls=(ToolCall(id="c", name=name, arguments=args),)),
        Message(role="tool", tool_call_id="c", name=name, content="ok"),
        Message(role="assistant", content="Done: anything else?"),
    )
    t = Transcript(conversation_id=f"{task}-{i}", task_key=task, messages=msgs)
    return ScoredRollout(
        rollout_id=f"{task}-r{i}", transcript=t, results=(), score=float(passed),
        passed=passed, reward_spec="outcome",
    )  # fmt: skip


def test_replay_off_log_episodes_are_ungraded_and_the_gate_will_not_promote_on_them(
    tmp_path: Path,
) -> None:
    logs = [_logged("t1", 0, True, "cancel_order"), _logged("t1", 1, False, "get_order")]
    register("replay-eval", lambda: ReplayEnvironment(rollouts=logs))
    try:
        agents = _agents()
        row = {"task_key": "t1", "prompt": [{"role": "user", "content": "x"}]}
        request = _request(_heldout(tmp_path, [row]), EnvironmentSpec(name="replay-eval"))
        report = run_evaluation(request, sampler_factory=lambda ref: agents[ref.label])
    finally:
        unregister("replay-eval")
    [p] = report.prompts
    # the apologising baseline's reply was never logged at the opening: off the log
    assert not p.baseline[0].graded and "off_log" in (p.baseline[0].reason or "")
    # the candidate's cancel_order call then reply walk the passing trajectory to its end
    assert p.candidate[0].graded and p.candidate[0].passed
    decision = decide(report, GateConfig(min_prompts=1))
    assert decision.decision == "reject"
    assert any("could not be graded" in r for r in decision.reasons)


def test_environment_spec_is_part_of_the_request_identity() -> None:
    a = ModelRef(base="b", label="baseline")
    first = EvalRequest(baseline=a, candidate=a, heldout=Path("h"), reward_spec="outcome")
    env = EnvironmentSpec(name="python", options={"domain": "x:y"})
    second = first.model_copy(update={"environment": env})
    assert first.model_dump() != second.model_dump()
    with pytest.raises(ValueError, match="max_turns"):
        EnvironmentSpec(name="python", max_turns=0)
