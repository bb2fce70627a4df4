"""What the generated OpenRLHF agent file calls: one episode of an environment, in the
shape OpenRLHF 0.11.2's ``MultiTurnAgentExecutor`` drives (``utils/agent.py``).

OpenRLHF makes one ``AgentInstance`` per sample, calls ``reset({"observation": prompt,
"label": label})`` and then ``step({"observation_text", "action_text", "label",
"sampling_params"})`` after each generation until ``done``; the episode's reward is the
*sum* of the step rewards (``rewards.item()``), environment feedback tokens are masked out.
So :class:`AgentSession` reports each step's reward as the change in the environment's
reward-if-it-ended-now: the sum is the last one, whenever OpenRLHF stops (done, or its
token budget). It is total: a hostile environment or label ends the episode with reward
0.0 and counts in ``extra_logs``; nothing raises. OpenRLHF has no "ungraded" reward, so an
off-log episode scores 0.0 too and is counted apart (``rlstream_env_off_log``).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from rlstream.environments.base import EnvironmentFailure
from rlstream.environments.episode import assistant_message, opening
from rlstream.environments.guard import call, checked_step
from rlstream.environments.registry import make_environment
from rlstream.environments.render import feedback_text, template_render

#: the ``format`` of every agent-mode label (the task rides in the label: OpenRLHF drops
#: other dataset keys)
AGENT_LABEL_FORMAT = "rlstream.openrlhf.agent.v1"
#: counters in every step's extra_logs (the same keys each time, as OpenRLHF logs them)
LOG_KEYS = (
    "rlstream_env_errors",
    "rlstream_env_off_log",
    "rlstream_env_success",
    "rlstream_env_turns",
)
_TRAILING_SPECIAL = re.compile(r"(?:\s*(?:<\|[^|<>\s]{1,40}\|>|</s>|<eos>|<end_of_turn>))+\s*$")
_MAX_LABEL = 1_000_000


class _Reward(float):
    """A float with ``.item()``: what OpenRLHF calls on ``rewards`` (no torch needed)."""

    def item(self) -> float:
        return float(self)


def task_label(task: dict[str, Any]) -> str:
    """The dataset label carrying one task."""
    return orjson.dumps(
        {"format": AGENT_LABEL_FORMAT, "task": task}, option=orjson.OPT_SORT_KEYS
    ).decode()


def parse_task(label: Any) -> dict[str, Any]:
    if not isinstance(label, str) or len(label) > _MAX_LABEL:
        raise EnvironmentFailure("the label is not a JSON string")
    try:
        data = orjson.loads(label)
    except orjson.JSONDecodeError as exc:
        raise EnvironmentFailure(f"the label is not JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != AGENT_LABEL_FORMAT:
        raise EnvironmentFailure(f"the label is not an {AGENT_LABEL_FORMAT} label")
    task = data.get("task")
    if not isinstance(task, dict):
        raise EnvironmentFailure("the label carries no task object")
    return task


class AgentSession:
    """One OpenRLHF sample's episode (see the module docstring)."""

    def __init__(self, name: str, options: dict[str, Any], max_turns: int, timeout_s: float):
        self.name, self.options = name, options
        self.max_turns, self.timeout_s = max_turns, timeout_s
        self.env: Any = None
        self.reported = 0.0
        self.turns = 0
        self.logs = dict.fromkeys(LOG_KEYS, 0.0)
        self.error: str | None = None

    async def reset(self, label: Any) -> None:
        """Make the environment and reset it for the label's task; a failure is kept and
        ends the episode at its first step."""
        try:
            task = parse_task(label)
            self.env = make_environment(self.name, **self.options)
            await opening(self.env, task, self.timeout_s)
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"[:300]

    def _result(self, reward: float, feedback: str, done: bool) -> dict[str, Any]:
        delta = reward - self.reported
        self.reported = reward
        self.logs["rlstream_env_turns"] = float(self.turns)
        return {
            "rewards": _Reward(delta),
            "scores": min(1.0, max(0.0, reward)),
            "environment_feedback": feedback,
            "done": done,
            "extra_logs": dict(self.logs),
        }

    def fail(self, reason: str) -> dict[str, Any]:
        """The episode ends as a graded failure: reward 0.0, one error counted."""
        self.error = reason[:300]
        self.logs["rlstream_env_errors"] = 1.0
        return self._result(0.0, "", True)

    async def step(self, action_text: Any, tokenizer: Any) -> dict[str, Any]:
        if self.error is not None or self.env is None:
            return self.fail(self.error or "no environment")
        try:
            if not isinstance(action_text, str):
                raise EnvironmentFailure("the action text is not a string")
            self.turns += 1
            reply = assistant_message(_TRAILING_SPECIAL.sub("", action_text))
            got = await call(self.env.step, reply, what="step", timeout_s=self.timeout_s)
            result = checked_step(got)
            reward = result.reward if result.reward is not None else 0.0
            if result.info.get("off_log") is True:
                self.logs["rlstream_env_off_log"] = 1.0
                return self._result(0.0, "", True)
            done = result.done or self.turns >= self.max_turns
            if done:
                self.logs["rlstream_env_success"] = 1.0 if reward >= 1.0 else 0.0
                return self._result(reward, "", True)
            render = template_render(tokenizer)
            eos = str(getattr(tokenizer, "eos_token", "") or "")
            return self._result(reward, feedback_text(render, eos, result.messages_out), False)
        except Exception as exc:
            return self.fail(f"{type(exc).__name__}: {exc}")
