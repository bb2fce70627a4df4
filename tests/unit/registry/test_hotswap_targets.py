"""The hot-swap deploy targets against a scripted HTTP server on loopback: ``serve`` posts
the admin call (token, body) and turns a refusal into DeployError; ``vllm`` loads the new
adapter under the model id, unloads the others, accepts "already loaded" on a retry, and
its request bodies match the request models of the vLLM release the GPU image pins."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rlstream.errors import ConfigError
from rlstream.registry import DeploySettings, make_target
from rlstream.registry.errors import DeployError
from rlstream.registry.hotswap import (
    ServeTarget,
    VllmTarget,
    vllm_load_request,
    vllm_unload_request,
)
from rlstream.serving.adapter import ADAPTER_PATH, AdapterSwap

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[3]
MANIFEST = Path(__file__).parent / "data" / "vllm-lora-api.json"

Script = dict[tuple[str, str], list[tuple[int, Any]]]


class Fake:
    """Answers each (method, path) from a script (the last answer repeats); keeps requests."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.seen: list[tuple[str, str, Any, str | None]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, method: str) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(size)) if size else None
                fake.seen.append((method, self.path, body, self.headers.get("Authorization")))
                answers = fake.script[(method, self.path)]
                status, out = answers.pop(0) if len(answers) > 1 else answers[0]
                raw = out.encode() if isinstance(out, str) else json.dumps(out).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self) -> None:
                self._answer("POST")

            def do_GET(self) -> None:
                self._answer("GET")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def fake() -> Iterator[Fake]:
    f = Fake({})
    thread = threading.Thread(target=f.server.serve_forever, daemon=True)
    thread.start()
    yield f
    f.server.shutdown()


def _deploy(target: Any, model_id: str = "m-new", path: str | None = "/runs/r2") -> None:
    asyncio.run(target.deploy(agent="bot", model_id=model_id, model_path=path, promotion_id="p-7"))


def test_serve_target_posts_the_admin_call_and_raises_on_a_failed_swap(fake: Fake) -> None:
    ok = {"model_id": "m-new", "previous": "m-old", "load_s": 1.5}
    failed = {"error": {"message": "bad safetensors", "type": "adapter_load_failed"}}
    fake.script[("POST", ADAPTER_PATH)] = [(200, ok), (422, failed)]
    target = ServeTarget(fake.url + "/", timeout_s=5, token="tok")
    assert target.ref() == fake.url
    _deploy(target)
    (method, path, body, auth) = fake.seen[0]
    assert (method, path, auth) == ("POST", ADAPTER_PATH, "Bearer tok")
    assert AdapterSwap.model_validate(body) == AdapterSwap(
        model_id="m-new", model_path="/runs/r2", promotion_id="p-7"
    )
    with pytest.raises(DeployError, match=r"did not swap to m-new \(422\): bad safetensors"):
        _deploy(target)


def test_serve_target_unreachable_is_a_deploy_error() -> None:
    with pytest.raises(DeployError, match="unreachable"):
        _deploy(ServeTarget("http://127.0.0.1:9", timeout_s=2))


def _models(*loras: str) -> dict[str, Any]:
    cards = [{"id": "base", "root": "/models/base", "parent": None}]
    cards += [{"id": n, "root": f"/runs/{n}", "parent": "base"} for n in loras]
    return {"object": "list", "data": cards}


def test_vllm_target_loads_then_unloads_the_others(fake: Fake) -> None:
    fake.script.update(
        {
            ("POST", "/v1/load_lora_adapter"): [(200, "Success: LoRA adapter 'm-new' added")],
            ("GET", "/v1/models"): [(200, _models("m-old", "m-new"))],
            ("POST", "/v1/unload_lora_adapter"): [(200, "Success")],
        }
    )
    _deploy(VllmTarget(fake.url, timeout_s=5, api_key="k"))
    assert [(m, p, b) for m, p, b, _ in fake.seen] == [
        ("POST", "/v1/load_lora_adapter", {"lora_name": "m-new", "lora_path": "/runs/r2"}),
        ("GET", "/v1/models", None),
        ("POST", "/v1/unload_lora_adapter", {"lora_name": "m-old"}),
    ]
    assert {a for *_, a in fake.seen} == {"Bearer k"}


def test_vllm_target_retry_and_failures(fake: Fake) -> None:
    again = {"error": {"message": "The lora adapter 'm-new' has already been loaded.", "code": 400}}
    fake.script.update(
        {
            ("POST", "/v1/load_lora_adapter"): [
                (400, again),
                (404, {"error": {"message": "Loading lora m-new failed: No adapter found"}}),
            ],
            ("GET", "/v1/models"): [(200, _models("m-new"))],
        }
    )
    target = VllmTarget(fake.url, timeout_s=5)
    _deploy(target)  # a retried announcement: already loaded, nothing else to unload
    assert [p for _, p, _, _ in fake.seen] == ["/v1/load_lora_adapter", "/v1/models"]
    with pytest.raises(DeployError, match=r"did not load m-new from /runs/r2 \(404\)"):
        _deploy(target)


def test_make_target_builds_the_hot_swap_targets() -> None:
    serve = make_target(DeploySettings(deploy_target="serve", deploy_serve_url="http://s:8000"))
    assert isinstance(serve, ServeTarget) and serve.ref() == "http://s:8000"
    vllm = make_target(
        DeploySettings(deploy_target="vllm", deploy_vllm_url="http://v:8000", deploy_timeout_s=9)
    )
    assert isinstance(vllm, VllmTarget) and vllm.timeout_s == 9
    for name in ("serve", "vllm"):
        with pytest.raises(ConfigError, match=f"RLSTREAM_DEPLOY_{name.upper()}_URL"):
            make_target(DeploySettings(), name)  # type: ignore[arg-type]


_TYPES = {"str": str, "bool": bool, "int | None": (int, type(None))}


def _matches(payload: dict[str, Any], fields: dict[str, Any]) -> None:
    assert set(payload) <= set(fields), f"fields vLLM does not read: {set(payload) - set(fields)}"
    assert {n for n, f in fields.items() if f["required"]} <= set(payload)
    for name, value in payload.items():
        assert isinstance(value, _TYPES[fields[name]["type"]]), name


def test_our_vllm_requests_match_the_pinned_release() -> None:
    manifest = json.loads(MANIFEST.read_text())
    pinned = re.search(r"ARG VLLM_VERSION=(\S+)", (ROOT / "docker" / "Dockerfile.gpu").read_text())
    assert pinned and pinned.group(1) == manifest["vllm_version"], (
        "the GPU image pins another vLLM: re-extract tests/unit/registry/data/vllm-lora-api.json"
    )
    api = manifest["endpoints"]
    _matches(vllm_load_request("m-1", "/runs/r1"), api["POST /v1/load_lora_adapter"]["fields"])
    _matches(vllm_unload_request("m-1"), api["POST /v1/unload_lora_adapter"]["fields"])
    assert "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True" in manifest["enabled_by"]
