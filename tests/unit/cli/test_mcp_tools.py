"""``rlstream mcp``'s tools through the SDK's own client (in memory): the batch half of the
loop on sample logs, schemas, resources, workspace refusals and one-line errors."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp.client.session import ClientSession
from mcp.shared.memory import create_connected_server_and_client_session
from typer.testing import CliRunner

from rlstream.sampledata import write_sample_logs
from rlstream.services.cli.main import app
from rlstream.services.cli.mcpserver.server import build_server

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    write_sample_logs(root / "sample", seed=7)
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.jsonl").write_text('{"messages": []}\n')
    os.symlink(outside / "secret.jsonl", root / "link.jsonl")
    os.symlink(outside, root / "linkdir")
    return root


async def _call(s: ClientSession, schemas: dict[str, Any], name: str, **args: Any) -> Any:
    r = await s.call_tool(name, args)
    assert not r.isError, r.content[0].text  # type: ignore[union-attr]
    jsonschema.validate(r.structuredContent, schemas[name])
    return r.structuredContent


async def _error(s: ClientSession, name: str, **args: Any) -> str:
    r = await s.call_tool(name, args)
    assert r.isError
    text: str = r.content[0].text  # type: ignore[union-attr]
    assert "\n" not in text and "Traceback" not in text
    return text


async def test_batch_half_of_the_loop_with_schemas_and_resources(workspace: Path) -> None:
    server, _ = build_server(workspace)
    async with create_connected_server_and_client_session(server) as s:
        tools = (await s.list_tools()).tools
        schemas = {t.name: t.outputSchema for t in tools}
        assert set(schemas) == {
            "ingest", "grade", "profile", "curate", "estimate_cost", "train", "evaluate",
            "lineage", "promote", "rollback",
        }  # fmt: skip
        assert all(schemas.values())
        got = await _call(s, schemas, "ingest", inputs=["sample/logs"], out="t.jsonl")
        assert got["ok"] > 100 and got["transcripts"] == "t.jsonl"
        got = await _call(
            s, schemas, "grade", input="t.jsonl", out="g.jsonl", reward_config="sample/rewards.yaml"
        )
        assert got["counts"]["graded"] > 100
        prof = await _call(s, schemas, "profile", input="g.jsonl")
        assert prof["verdict"] == "trains" and prof["gradient_support"] > 0.3
        assert prof["headroom"] is not None and "1" in prof["pass_at_k"]
        cur = await _call(s, schemas, "curate", input="g.jsonl", out="ds")
        assert cur["heldout"] == "ds/heldout.jsonl" and cur["files"]["grpo.jsonl"] > 0
        cost = await _call(s, schemas, "estimate_cost", dataset="ds", method="sft", max_steps=5)
        assert cost["gpu_hours"] > 0 and cost["budget_ok"] is True and cost["steps"] == 5
        # a Kubernetes launch without confirm: the plan and what it would change, nothing else
        plan = await _call(
            s, schemas, "train", dataset="ds", method="sft", max_steps=5, launcher="kubernetes"
        )
        assert plan["applied"] is False and plan["status"] == "planned"
        assert "creates Kubernetes Job" in plan["will_change"]
        assert plan["will_change"].endswith("call again with confirm: true")
        assert not (workspace / "runs").exists()
        # resources: the latest profile and manifest, as the tools returned them
        text = (await s.read_resource("rlstream://profile/latest")).contents[0]
        assert json.loads(text.text)["verdict"] == "trains"  # type: ignore[union-attr]
        text = (await s.read_resource("rlstream://dataset/latest/manifest")).contents[0]
        assert json.loads(text.text)["dataset_id"] == cur["dataset_id"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"input": "/etc/passwd"}, "input /etc/passwd is outside the workspace"),
        ({"input": "../x.jsonl"}, "'..' is not allowed"),
        ({"input": "sample/../../x.jsonl"}, "'..' is not allowed"),
        ({"input": "link.jsonl"}, "link.jsonl is a symlink to"),
        ({"input": "linkdir/secret.jsonl"}, "is a symlink to"),
    ],
)
async def test_paths_outside_the_workspace_are_refused(
    workspace: Path, args: dict[str, str], message: str
) -> None:
    server, _ = build_server(workspace)
    async with create_connected_server_and_client_session(server) as s:
        text = await _error(s, "profile", **args)
        assert text.startswith("error: ") and message in text
        # an ingest glob or folder cannot lead out either
        text = await _error(s, "ingest", inputs=["link*"], out="x.jsonl")
        assert "is a symlink to" in text
        assert not (workspace / "x.jsonl").exists()
        text = await _error(s, "ingest", inputs=["sample"], out="/tmp/out.jsonl")
        assert "out /tmp/out.jsonl is outside the workspace" in text


async def test_errors_are_the_clis_one_line(workspace: Path, tmp_path: Path) -> None:
    server, _ = build_server(workspace)
    cli = CliRunner().invoke(
        app, ["grade", "--in", str(workspace / "nope.jsonl"), "--out", str(tmp_path / "o")]
    )
    async with create_connected_server_and_client_session(server) as s:
        text = await _error(s, "grade", input="nope.jsonl", out="o.jsonl", reward="gsm8k")
    assert text == " ".join(cli.output.split())
    assert text == f"error: input not found: {workspace.resolve() / 'nope.jsonl'}"


async def test_promote_and_rollback_need_confirm(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no registry reachable: the refusal still comes, naming what would change
    monkeypatch.setenv("RLSTREAM_POSTGRES_DSN", "postgresql://nobody@127.0.0.1:1/none")
    server, _ = build_server(workspace)
    async with create_connected_server_and_client_session(server) as s:
        text = await _error(s, "promote", model="3f2a9c1b7d0e", agent="support")
        assert text.startswith("error: promote would make 3f2a9c1b7d0e the champion of 'support'")
        assert text.endswith("nothing changed: call again with confirm: true")
        text = await _error(s, "rollback", agent="support")
        assert "rollback would restore the previous champion of 'support'" in text
        assert "confirm: true" in text
