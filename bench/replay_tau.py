"""The ``replay`` environment on tau-bench's logged trajectories (MIT, nobody on this project
wrote them): how far a policy that acts like one logged trial gets when the environment
replays the *other* trials of its task.

* **self**: each conversation's own assistant turns against its whole group: it must be
  reproduced message for message, its logged outcome as the reward (the environment never
  invents a result and never loses its place);
* **leave-one-out**: each conversation's assistant turns against the other trials of its
  task only (a fresh policy behaving like this trial): how many episodes stay on the log to
  the end of a logged trajectory (and whether that reward agrees with the trial's own
  outcome), go off the log (and after how many turns), or end before any trajectory does.

    git show <tau-bench commit>:historical_trajectories/gpt-4o-airline.json > /tmp/a.json
    .venv/bin/python bench/replay_tau.py /tmp/a.json
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import statistics
import time
from pathlib import Path
from typing import Any

from rlstream.environments import ReplayEnvironment, run_episode
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message
from turn_refs_tau import load


def _sampler(turns: list[Message]) -> Any:
    it = iter(turns)

    async def sample(messages: list[Message], tools: list[dict[str, Any]]) -> Message | None:
        return next(it, None)

    return sample


async def _play(group: list[ScoredRollout], r: ScoredRollout, opening: str | None) -> Any:
    turns = [m for m in r.transcript.messages if m.role == "assistant"]
    task = {"task_key": r.task_key, **({"opening": opening} if opening else {})}
    env = ReplayEnvironment(rollouts=group)
    return await run_episode(env, task, _sampler(turns), max_turns=len(turns) + 1)


async def measure(groups: list[list[ScoredRollout]]) -> dict[str, Any]:
    exact = 0
    loo: collections.Counter[str] = collections.Counter()
    agree = disagree = 0
    off_turns: list[float] = []
    t0 = time.perf_counter()
    episodes = 0
    for g in groups:
        for r in g:
            ep = await _play(g, r, r.rollout_id)
            episodes += 1
            ok = ep.status == "done" and ep.reward == float(r.passed)
            exact += ok and ep.messages == list(r.transcript.messages)
            others = [o for o in g if o.rollout_id != r.rollout_id]
            if not others:
                loo["no other trial"] += 1
                continue
            ep = await _play(others, r, None)
            episodes += 1
            loo[ep.status] += 1
            if ep.status == "done":
                agree += ep.reward == float(r.passed)
                disagree += ep.reward != float(r.passed)
            if ep.status == "off_log":
                n = sum(m.role == "assistant" for m in r.transcript.messages)
                off_turns.append(ep.turns / n)
    wall = time.perf_counter() - t0
    rollouts = sum(len(g) for g in groups)
    return {
        "rollouts": rollouts,
        "tasks": len(groups),
        "self_replay_exact": exact,
        "leave_one_out": dict(loo),
        "leave_one_out_done_reward_agrees": agree,
        "leave_one_out_done_reward_disagrees": disagree,
        "off_log_at_share_of_turns_median": round(statistics.median(off_turns), 3)
        if off_turns
        else None,
        "episodes": episodes,
        "ms_per_episode": round(1000 * wall / max(episodes, 1), 2),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trajectories", type=Path, help="a tau-bench historical_trajectories JSON")
    a = ap.parse_args(argv)
    groups, _ = load(a.trajectories)
    out = asyncio.run(measure(groups))
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
