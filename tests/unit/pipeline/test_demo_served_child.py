"""The demo's served-model child: started on a port, answers chat as an OpenAI client sends
it, hot-swaps through the admin endpoint, and is restarted on the new model by a server
that has no such endpoint. A stub server stands in for ``rlstream serve`` (no model)."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from rlstream.pipeline.served import ServedModel, ServeError
from rlstream.reporting import write_html_report
from rlstream.reporting.story import cycles_tables

pytestmark = pytest.mark.unit

STUB = """
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
state = {"model": args[args.index("--model-id") + 1], "swap": "--swap" in args}
log = args[args.index("--log-jsonl") + 1]
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data))); self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self._send(200, {"ok": True})
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/v1/rlstream/adapter":
            if not state["swap"]:
                return self._send(404, {"error": {"message": "not found"}})
            prev, state["model"] = state["model"], body["model_id"]
            return self._send(200, {"model_id": body["model_id"], "previous": prev, "load_s": 0.1})
        cid = self.headers["X-Conversation-Id"]
        with open(log, "a") as f:
            f.write(json.dumps({"conversation_id": cid, "model": state["model"]}) + "\\n")
        self._send(200, {"choices": [{"message": {"content": "ok"}}], "model": state["model"]})
HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


@pytest.fixture
def stub(tmp_path: Path) -> Path:
    path = tmp_path / "stub_serve.py"
    path.write_text(STUB)
    return path


@pytest.mark.parametrize(("swap_flag", "how"), [(True, "hot-swap"), (False, "restart")])
def test_chat_then_swap_or_restart(stub: Path, tmp_path: Path, swap_flag: bool, how: str) -> None:
    argv = [sys.executable, str(stub), *(["--swap"] if swap_flag else [])]
    server = ServedModel(argv, tmp_path / "served.jsonl", tmp_path / "serve.log")
    server.start(None, "base:m")
    try:
        server.chat({"messages": [{"role": "user", "content": "hi"}]}, "c1")
        assert server.swap(tmp_path / "adapter", "model-2", None) == how
        assert server.model_id == "model-2" and server.restarts == (0 if swap_flag else 1)
        server.chat({"messages": [{"role": "user", "content": "hi"}]}, "c2")
    finally:
        server.stop()
    logged = [orjson.loads(x) for x in (tmp_path / "served.jsonl").open("rb")]
    assert [(r["conversation_id"], r["model"]) for r in logged] == [
        ("c1", "base:m"),
        ("c2", "model-2"),
    ]


def test_a_server_that_exits_fails_the_start_with_its_output(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import sys; print('no model here', file=sys.stderr); sys.exit(3)")
    server = ServedModel([sys.executable, str(bad)], tmp_path / "s.jsonl", tmp_path / "s.log")
    with pytest.raises(ServeError, match="exited 3: no model here"):
        server.start(None, "m")


CYCLE = {
    "cycle": 1, "serving_before": "base:SmolLM2", "serving_after": "abcdef0123456789",
    "conversations": 12, "served_pass_rate": 0.25,
    "conversations_per_model": {"base:SmolLM2": 12},
    "dataset_rows": {"sft.jsonl": {"base:SmolLM2": 3, "shopco-agent-large": 40}},
    "metric": "pass_at_1", "baseline": 0.1, "candidate": 0.6, "delta": 0.5, "ci_low": 0.3,
    "ci_high": 0.7, "n_prompts": 16, "decision": "promote", "reason": "gain", "swap": "hot-swap",
    "candidate_model": "abcdef0123456789", "seconds": {},
}  # fmt: skip


def test_the_report_shows_each_cycle(tmp_path: Path) -> None:
    (tmp_path / "cycles.json").write_bytes(orjson.dumps([CYCLE]))
    per_cycle, per_model = cycles_tables([CYCLE])
    (row,) = per_cycle.rows
    assert row[1] == "base:SmolLM2" and row[2] == "12 (25% pass)"
    assert row[4] == "0.100 -> 0.600" and row[5] == "+0.500 [+0.300, +0.700]"
    assert row[7] == "promote" and row[8] == "abcdef012345 (hot-swap)"
    assert "shopco-agent-large: 40" in row[3]
    assert per_model.rows == (("base:SmolLM2", "12"),)
    page = write_html_report(tmp_path).read_text()
    assert "The loop, cycle by cycle" in page and "abcdef012345 (hot-swap)" in page
