"""An agent runs the whole improve loop through ``rlstream mcp`` with nothing but the MCP
SDK's client over stdio: ingest -> grade -> profile -> curate -> estimate_cost -> train (two
CPU steps) -> evaluate on the demo's order logs; every result checked against its tool's
outputSchema, progress notifications received, a long training call cancelled, and
refusals for a path outside the workspace and for promote without confirm."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

from rlstream.sampledata.orders import REWARD, write_order_logs

pytestmark = [pytest.mark.train, pytest.mark.timeout(600)]

BIN = Path(sys.executable).parent


def _server(workspace: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLSTREAM_")}
    env["RLSTREAM_MODELS_DIR"] = os.environ["RLSTREAM_MODELS_DIR"]
    # promote's preview must not find (or start) a real registry in this test
    env["RLSTREAM_POSTGRES_DSN"] = "postgresql://nobody@127.0.0.1:1/none"
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="2")
    return StdioServerParameters(
        command=str(BIN / "rlstream"), args=["mcp", "--workspace", str(workspace)], env=env
    )


class Loop:
    s: ClientSession
    schemas: dict[str, Any]

    def __init__(self) -> None:
        self.progress: dict[str, list[tuple[float, float | None, str | None]]] = {}
        self.logs: list[str] = []
        self.stopped = anyio.Event()

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(str(params.data))
        if str(params.data).startswith("cancelled"):
            self.stopped.set()

    async def call(self, name: str, **args: Any) -> Any:
        seen = self.progress.setdefault(name, [])

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            seen.append((done, total, message))

        r = await self.s.call_tool(name, args, progress_callback=on_progress)
        assert not r.isError, r.content[0].text  # type: ignore[union-attr]
        jsonschema.validate(r.structuredContent, self.schemas[name])
        return r.structuredContent

    async def refused(self, name: str, **args: Any) -> str:
        r = await self.s.call_tool(name, args)
        assert r.isError
        text: str = r.content[0].text  # type: ignore[union-attr]
        assert "\n" not in text and "Traceback" not in text
        return text


async def _cancel_training(loop: Loop, workspace: Path) -> tuple[float, float]:
    """Start a 500-step run, cancel it at its first step; seconds from the cancel to the
    error reply and to the worker's stop."""
    stepping = anyio.Event()
    outcome: dict[str, Any] = {}

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        if message and message.startswith("training step"):
            stepping.set()

    async def long_call() -> None:
        try:
            outcome["result"] = await loop.s.call_tool(
                "train",
                {"dataset": "ds", "method": "sft", "max_steps": 500, "batch_size": 2,
                 "max_length": 160, "output": "runs/cancelled"},
                progress_callback=on_progress,
            )  # fmt: skip
        except McpError as exc:
            outcome["error"] = exc
        outcome["at"] = time.monotonic()

    request_id = loop.s._request_id  # the id the next request gets
    async with anyio.create_task_group() as tg:
        tg.start_soon(long_call)
        with anyio.fail_after(300):
            await stepping.wait()
        sent = time.monotonic()
        await loop.s.send_notification(
            types.ClientNotification(
                types.CancelledNotification(
                    params=types.CancelledNotificationParams(requestId=request_id, reason="test")
                )
            )
        )
    assert "error" in outcome, outcome.get("result")
    assert "cancelled" in str(outcome["error"]).lower()
    # the worker stopped at its next step: the server says so in a log notification
    with anyio.fail_after(120):
        await loop.stopped.wait()
    stopped_after = time.monotonic() - sent
    assert loop.logs[-1].startswith("cancelled: stopped at training step"), loop.logs
    assert not (workspace / "runs" / "cancelled" / "run.json").exists()
    return float(outcome["at"] - sent), stopped_after


async def test_the_whole_loop_through_mcp(base_model: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    write_order_logs(workspace / "orders.jsonl", seed=7, n_tasks=40, rollouts=3)
    loop = Loop()
    async with (
        stdio_client(_server(workspace)) as (read, write),
        ClientSession(read, write, logging_callback=loop.on_log) as session,
    ):
        await session.initialize()
        loop.s = session
        loop.schemas = {t.name: t.outputSchema for t in (await session.list_tools()).tools}

        got = await loop.call("ingest", inputs=["orders.jsonl"], out="t.jsonl")
        assert got["ok"] == 120
        got = await loop.call("grade", input="t.jsonl", out="g.jsonl", reward=REWARD)
        assert got["counts"]["graded"] == 120
        prof = await loop.call("profile", input="g.jsonl")
        assert prof["verdict"] and prof["pass_at_1"] is not None
        assert set(prof) >= {"gradient_support", "pass_at_k", "headroom", "verdict"}
        cur = await loop.call("curate", input="g.jsonl", out="ds", heldout_share=0.2)
        assert cur["heldout"] == "ds/heldout.jsonl" and cur["files"]["sft.jsonl"] > 0
        cost = await loop.call("estimate_cost", dataset="ds", method="sft", max_steps=2)
        assert cost["gpu_hours"] > 0 and isinstance(cost["budget_ok"], bool)

        run = await loop.call(
            "train", dataset="ds", method="sft", max_steps=2, batch_size=2, max_length=160,
            model=None,
        )  # fmt: skip
        assert run["status"] == "succeeded" and run["steps"] == 2, run
        assert (workspace / run["adapter_dir"] / "adapter_config.json").is_file()
        steps = [m for _, _, m in loop.progress["train"] if m and "training step" in m]
        assert steps and steps[-1].startswith("training step 2/2")

        ev = await loop.call(
            "evaluate", heldout=cur["heldout"], candidate_adapter=run["adapter_dir"],
            reward=REWARD, greedy=True, k=1, max_prompts=3, max_new_tokens=24,
            training_dataset="ds", out="eval",
        )  # fmt: skip
        assert ev["decision"] == "insufficient" and ev["prompts"] == 3  # 3 < min_prompts
        assert (workspace / "eval" / "report.md").is_file()
        assert loop.progress["evaluate"], "no progress notification from evaluate"
        report = await session.read_resource("rlstream://evaluation/latest/report")
        assert "insufficient" in report.contents[0].text  # type: ignore[union-attr]

        answered, stopped = await _cancel_training(loop, workspace)
        print(f"cancel: answered in {answered:.2f} s, training stopped after {stopped:.2f} s")
        assert answered < 30
        # the server is still serving after the cancel
        assert (await loop.call("profile", input="g.jsonl"))["rollouts"] == 120

        text = await loop.refused("profile", input=str(tmp_path / "elsewhere.jsonl"))
        assert text.startswith("error: input ") and "outside the workspace" in text
        text = await loop.refused("train", dataset="../ds")
        assert "'..' is not allowed" in text
        text = await loop.refused("promote", model="0123456789ab", agent="orders-bot")
        assert text.endswith("nothing changed: call again with confirm: true")
