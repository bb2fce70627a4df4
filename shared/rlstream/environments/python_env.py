"""``python``: the user's tool functions over a state, graded by the state they leave.

The shape of tau-bench-style environments, which need no model to grade: a *domain* is a
set of tool functions ``fn(state, **arguments) -> result`` over a JSON-like ``state``
dict, and an initial state. A task says what the user asks and the ground-truth actions
(``[{"name": ..., "arguments": {...}}]``). The reward compares the episode's state with
the state those actions produce from the same initial state: 1.0 when equal, else 0.0
(computed after every step, so a truncated episode is graded too).

* A call the model gets wrong (unknown tool, bad arguments, a tool raising) is a tool
  result ``Error: ...`` (``is_error``): a model mistake, answered, not an environment
  failure. Ground-truth actions that fail are the task's fault: reset fails.
* A turn without a call is answered by the task's next ``followups`` user turn; with none
  left the episode is done.

Point it at your own domain with ``domain="your.module:attr"``: ``attr`` is a
:class:`Domain` or a zero-argument callable returning one. The built-in example is
``rlstream.environments.orders:DOMAIN`` (the default).
"""

from __future__ import annotations

import copy
import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from rlstream.environments.base import StepResult, Task, Tools
from rlstream.errors import ConfigError, InputError
from rlstream.transcript import Message

DEFAULT_DOMAIN = "rlstream.environments.orders:DOMAIN"
CALL_FORMAT = (
    "To call a tool, answer with only a fenced JSON block: "
    '```json\n{"name": "<tool>", "arguments": {...}}\n```. '
    "Answer without a tool call to reply to the user."
)
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}


def tool_spec(fn: Callable[..., Any]) -> dict[str, Any]:
    """An OpenAI-style spec from ``fn(state, arg: type, ...)``'s signature and docstring."""
    params = list(inspect.signature(fn, eval_str=True).parameters.values())[1:]
    props: dict[str, Any] = {}
    for p in params:
        typ = _JSON_TYPES.get(p.annotation) if isinstance(p.annotation, type) else None
        props[p.name] = {"type": typ} if typ else {}
    required = [p.name for p in params if p.default is inspect.Parameter.empty]
    doc = (inspect.getdoc(fn) or fn.__name__).splitlines()[0]
    return {
        "type": "function",
        "function": {
            "name": fn.__name__,
            "description": doc,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


@dataclass(frozen=True)
class Domain:
    """Tool functions over a state dict, the state they start from and a system prompt."""

    name: str
    functions: Mapping[str, Callable[..., Any]]
    initial_state: Callable[[], dict[str, Any]]
    system_prompt: str = ""

    @classmethod
    def of(
        cls,
        name: str,
        functions: list[Callable[..., Any]],
        initial_state: Callable[[], dict[str, Any]],
        system_prompt: str = "",
    ) -> Domain:
        return cls(name, {f.__name__: f for f in functions}, initial_state, system_prompt)

    def tools(self) -> Tools:
        return [tool_spec(f) for f in self.functions.values()]


def load_domain(ref: str | Domain) -> Domain:
    """A Domain from ``module:attr`` (a Domain or a factory of one)."""
    if isinstance(ref, Domain):
        return ref
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"python environment domain {ref!r}: expected 'module:attr'")
    try:
        obj: Any = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"python environment domain {ref!r}: {exc}") from exc
    if not isinstance(obj, Domain) and callable(obj):
        obj = obj()
    if not isinstance(obj, Domain):
        raise ConfigError(f"python environment domain {ref!r} is not a Domain")
    return obj


def _arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    args = call.get("arguments", call.get("kwargs", {}))
    return dict(args) if isinstance(args, Mapping) else {}


def apply_actions(domain: Domain, state: dict[str, Any], actions: Any) -> dict[str, Any]:
    """``state`` after the ground-truth ``actions`` (InputError when one fails)."""
    if not isinstance(actions, list):
        raise InputError("python task: actions must be a list")
    for i, a in enumerate(actions):
        fn = domain.functions.get(str(a.get("name"))) if isinstance(a, Mapping) else None
        if fn is None:
            raise InputError(f"python task: ground-truth action {i} names no tool of the domain")
        try:
            fn(state, **_arguments(a))
        except Exception as exc:
            raise InputError(f"python task: ground-truth action {i} failed: {exc}") from exc
    return state


def _result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=str, option=orjson.OPT_SORT_KEYS).decode()


class PythonEnvironment:
    """A :class:`Domain` played for one task at a time (see the module docstring).

    A task: ``{"task_id", "instruction"`` (the user's request) ``or "messages",
    "actions", "initial_state"`` (optional, else the domain's) ``, "followups"}``.
    """

    def __init__(self, domain: str | Domain = DEFAULT_DOMAIN) -> None:
        self.domain = load_domain(domain)
        self.state: dict[str, Any] = {}
        self._target: dict[str, Any] = {}
        self._followups: list[str] = []

    def reset(self, task: Task) -> tuple[list[Message], Tools]:
        start = task.get("initial_state")
        initial = copy.deepcopy(start) if isinstance(start, dict) else self.domain.initial_state()
        self._target = apply_actions(self.domain, copy.deepcopy(initial), task.get("actions", []))
        self.state = initial
        followups = task.get("followups") or []
        self._followups = [str(f) for f in followups]
        tools = self.domain.tools()
        system = "\n\n".join(
            s
            for s in (self.domain.system_prompt, "Tools:\n" + _result_text(tools), CALL_FORMAT)
            if s
        )
        opening = task.get("messages")
        if isinstance(opening, list) and opening:
            msgs = [Message.model_validate(m) for m in opening]
        else:
            msgs = [Message(role="user", content=str(task.get("instruction", "")))]
        if msgs[0].role != "system":
            msgs.insert(0, Message(role="system", content=system))
        return msgs, tools

    def reward(self) -> float:
        """1.0 when the state equals the ground truth's, else 0.0."""
        return 1.0 if self.state == self._target else 0.0

    def step(self, message: Message) -> StepResult:
        if not message.tool_calls:
            if self._followups:
                nxt = Message(role="user", content=self._followups.pop(0))
                return StepResult((nxt,), False, self.reward())
            return StepResult((), True, self.reward())
        out = []
        for call in message.tool_calls:
            fn = self.domain.functions.get(call.name)
            args = call.arguments if isinstance(call.arguments, dict) else {}
            try:
                if fn is None:
                    raise KeyError(f"unknown tool {call.name!r}")
                text, err = _result_text(fn(self.state, **args)), False
            except Exception as exc:  # the model's call was wrong: answered, not fatal
                text, err = f"Error: {type(exc).__name__}: {exc}", True
            out.append(
                Message(
                    role="tool", content=text, tool_call_id=call.id, name=call.name, is_error=err
                )
            )
        return StepResult(tuple(out), False, self.reward())
