"""The replay environment: answers only with what the logs hold at the same call-history
state, ends an off-log episode ungraded, and rewards following a logged trajectory to its
end (1.0 passing, 0.0 failing)."""

from __future__ import annotations

from pathlib import Path

import pytest
from env_builders import call, logged, result, say, scripted

from rlstream.environments import NOT_IN_LOG, ReplayEnvironment, run_episode
from rlstream.errors import InputError
from rlstream.transcript import Message

pytestmark = pytest.mark.unit
SLICE = Path(__file__).parents[2] / "golden" / "tau_bench" / "gpt-4o-airline.slice.jsonl"

# task T: both look the order up; the passing one then cancels, the failing one refunds
PASS = logged(
    "T",
    0,
    True,
    [
        call("get_order", "a1", order_id="A-1"),
        result("a1", "get_order", '{"status": "pending"}'),
        say("assistant", "Cancel it?"),
        say("user", "yes please"),
        call("cancel_order", "a2", order_id="A-1"),
        result("a2", "cancel_order", "cancelled"),
        say("assistant", "Done."),
        say("user", "###STOP###"),
    ],
)
FAIL = logged(
    "T",
    1,
    False,
    [
        call("get_order", "b1", order_id="a-1"),  # same call, other case: same state
        result("b1", "get_order", '{"status": "pending", "v": 2}'),
        call("refund", "b2", order_id="A-1"),
        result("b2", "refund", "refunded"),
        say("assistant", "Refunded."),
    ],
)
OTHER = logged("U", 0, True, [call("refund", "c1", order_id="A-1"), result("c1", "refund", "x")])
LOGS = [PASS, FAIL, OTHER]
LOGGED_TEXT = {m.content for r in LOGS for m in r.transcript.messages}


def _contents(msgs: list[Message], start: int) -> list[str | None]:
    return [m.content for m in msgs[start:] if m.role != "assistant"]


async def test_following_the_passing_trajectory_to_its_end_scores_1() -> None:
    env = ReplayEnvironment(rollouts=LOGS)
    turns = [
        call("get_order", "x1", order_id="A-1"),
        say("assistant", "Shall I cancel?"),  # a reply: worded differently, still a reply
        call("cancel_order", "x2", order_id=" a-1 "),
        say("assistant", "All done."),
    ]
    ep = await run_episode(env, {"task_key": "T"}, scripted(turns))
    assert ep.status == "done" and ep.reward == 1.0 and ep.success
    assert _contents(ep.messages, 2) == [
        '{"status": "pending"}',
        "yes please",
        "cancelled",
        "###STOP###",
    ]
    tool_ids = [m.tool_call_id for m in ep.messages if m.role == "tool"]
    assert tool_ids == ["x1", "x2"]  # renamed to the episode's own call ids
    assert ep.info["followed"] == "T-r0"


async def test_following_the_failing_trajectory_scores_0() -> None:
    env = ReplayEnvironment(rollouts=LOGS)
    turns = [
        call("get_order", "x1", order_id="A-1"),
        call("refund", "x2", order_id="A-1"),
        say("assistant", "ok"),
    ]
    ep = await run_episode(env, {"task_key": "T"}, scripted(turns))
    assert ep.status == "done" and ep.reward == 0.0 and not ep.success
    # at the shared first state the followed (opening) trajectory answers; after the branch
    # the failing one does: the answers come from the logs, never made up
    assert _contents(ep.messages, 2) == ['{"status": "pending"}', "refunded"]


async def test_a_call_the_logs_never_saw_ends_the_episode_off_log() -> None:
    env = ReplayEnvironment(rollouts=LOGS)
    turns = [call("get_order", "x1", order_id="A-1"), call("cancel_order", "x2", order_id="A-2")]
    ep = await run_episode(env, {"task_key": "T"}, scripted(turns))
    assert ep.status == "off_log" and ep.reward is None and ep.info["off_log"] is True
    last = ep.messages[-1]
    assert last.role == "tool" and last.content == NOT_IN_LOG and last.is_error
    assert last.tool_call_id == "x2"


async def test_a_reply_where_the_logs_only_called_is_off_log_with_no_message() -> None:
    env = ReplayEnvironment(rollouts=LOGS)
    ep = await run_episode(env, {"task_key": "T"}, scripted([say("assistant", "hello?")]))
    assert ep.status == "off_log" and ep.messages[-1].role == "assistant"
    assert ep.info["action"] == "reply"


async def test_another_tasks_log_never_answers() -> None:
    env = ReplayEnvironment(rollouts=LOGS)
    # U's first call is refund(A-1) at the empty state; in T nobody refunds first
    ep = await run_episode(env, {"task_key": "T"}, scripted([call("refund", "x", order_id="A-1")]))
    assert ep.status == "off_log"


@pytest.mark.parametrize("seed", range(6))
async def test_never_invents_a_tool_result(seed: int) -> None:
    import random

    rng = random.Random(seed)
    options = [
        call("get_order", "g", order_id="A-1"),
        call("cancel_order", "c", order_id="A-1"),
        call("refund", "r", order_id="A-1"),
        say("assistant", "hm"),
    ]
    turns = [rng.choice(options) for _ in range(5)]
    ep = await run_episode(ReplayEnvironment(rollouts=LOGS), {"task_key": "T"}, scripted(turns))
    for m in ep.messages[2:]:
        if m.role != "assistant":
            assert m.content in LOGGED_TEXT or m.content == NOT_IN_LOG


async def test_unknown_task_and_step_before_reset() -> None:
    env = ReplayEnvironment(rollouts=LOGS)
    with pytest.raises(InputError, match="no logged trajectories"):
        env.reset({"task_key": "nope"})
    with pytest.raises(InputError, match="step before reset"):
        env.step(say("assistant", "x"))


async def test_tau_bench_trajectories_replay_themselves_exactly() -> None:
    """Third-party logs (MIT): playing a logged conversation's own assistant turns back
    reproduces it message for message, with its logged outcome as the reward."""
    env0 = ReplayEnvironment(logs=SLICE)
    seen = 0
    for key in env0.task_keys:
        group = env0._rollouts[key]
        for r in group:
            asst = [m for m in r.transcript.messages if m.role == "assistant"]
            env = ReplayEnvironment(rollouts=group)
            task = {"task_key": key, "opening": r.rollout_id}
            ep = await run_episode(env, task, scripted(asst), max_turns=len(asst) + 1)
            assert ep.status == "done" and ep.reward == (1.0 if r.passed else 0.0)
            assert ep.messages == list(r.transcript.messages)
            seen += 1
    assert seen == 4
