"""How faithful is the ``tau-airline`` environment to tau-bench itself?

Replays every tool call of tau-bench's logged airline trajectories (gpt-4o, 50 tasks x 4
trials, MIT; nobody on this project wrote them) through rlstream's port of the domain and
compares, call by call and episode by episode, with what tau-bench logged:

* **tool results**: the result the port returns for each logged call against the logged
  tool message (parsed JSON equal, or the same text; ``Error`` results compared as errors);
* **reward**: the port's state reward after the episode (state == the state the task's
  ground-truth actions leave) against tau-bench's logged reward, which also requires the
  task's ``outputs`` to be said; the disagreements are split by that cause.

    git show <tau-bench commit>:historical_trajectories/gpt-4o-airline.json > /tmp/a.json
    .venv/bin/python bench/tau_airline_fidelity.py /tmp/a.json
"""

from __future__ import annotations

import argparse
import collections
import json
import time
from pathlib import Path
from typing import Any

from rlstream.environments.tau_airline import TauAirlineEnvironment
from rlstream.transcript import Message


def _same(port: Message, logged: dict[str, Any]) -> bool:
    text, want = str(port.content or ""), str(logged.get("content") or "")
    if want.startswith("Error") or port.is_error:
        return bool(port.is_error) and want.startswith("Error")
    try:
        return bool(json.loads(text) == json.loads(want))
    except ValueError:
        return text == want


def replay(entry: dict[str, Any], env: TauAirlineEnvironment) -> tuple[float, int, int, list[str]]:
    """(port reward, calls, calls with the logged result, mismatching tool names)."""
    env.reset({"task_id": entry["task_id"]})
    traj = entry["traj"]
    calls = same = 0
    bad: list[str] = []
    reward = env._env.reward()
    for i, m in enumerate(traj):
        if m.get("role") != "assistant" or not m.get("tool_calls"):
            continue
        calls_in = [
            {"id": c["id"], "name": c["function"]["name"],
             "arguments": json.loads(c["function"]["arguments"] or "{}")}
            for c in m["tool_calls"]
        ]  # fmt: skip
        msg = Message.model_validate(
            {"role": "assistant", "content": m.get("content"), "tool_calls": calls_in}
        )
        out = env.step(msg)
        reward = float(out.reward if out.reward is not None else 0.0)
        logged = [t for t in traj[i + 1 : i + 1 + len(m["tool_calls"])] if t.get("role") == "tool"]
        for port_msg, log_msg in zip(out.messages_out, logged, strict=False):
            calls += 1
            if _same(port_msg, log_msg):
                same += 1
            else:
                bad.append(str(port_msg.name))
    return reward, calls, same, bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "trajectories", type=Path, help="tau-bench historical_trajectories/*airline*.json"
    )
    args = ap.parse_args()
    entries = json.loads(args.trajectories.read_text())
    env = TauAirlineEnvironment()
    tasks = env._data["tasks"]
    t0 = time.perf_counter()
    calls = same = 0
    mismatched: collections.Counter[str] = collections.Counter()
    table: collections.Counter[tuple[int, int]] = collections.Counter()
    outputs_cause = 0
    for e in entries:
        reward, c, s, bad = replay(e, env)
        calls, same = calls + c, same + s
        mismatched.update(bad)
        logged = int(float(e["reward"]) >= 1.0)
        table[(logged, int(reward >= 1.0))] += 1
        if logged == 0 and reward >= 1.0 and tasks[e["task_id"]]["outputs"]:
            outputs_cause += 1
    wall = time.perf_counter() - t0
    n = len(entries)
    agree = table[(0, 0)] + table[(1, 1)]
    print(
        f"episodes {n}, tool calls {calls}, {wall:.1f} s ({wall / max(n, 1) * 1000:.0f} ms/episode)"
    )
    print(f"tool results equal to the logged ones: {same}/{calls} ({same / max(calls, 1):.1%})")
    if mismatched:
        print("  differing results by tool:", dict(mismatched.most_common()))
    print(f"reward agrees with tau-bench's: {agree}/{n} ({agree / max(n, 1):.1%})")
    print(f"  logged pass, port pass {table[(1, 1)]}; logged fail, port fail {table[(0, 0)]}")
    print(f"  logged pass, port fail {table[(1, 0)]} (false fail)")
    print(
        f"  logged fail, port pass {table[(0, 1)]} (false pass; {outputs_cause} on tasks with "
        "outputs the port does not check)"
    )


if __name__ == "__main__":
    main()
