"""Deploy targets that swap the adapter in a running server: no restart, no request dropped.

``serve`` posts ``rlstream serve``'s admin call (``POST /v1/rlstream/adapter``): the server
loads the adapter beside the serving one and swaps between requests; a failed load answers
422/500 and it keeps serving the previous model. ``vllm`` uses vLLM's runtime LoRA API
(the server needs ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``): load the champion's adapter
under its model id (clients ask for that id as ``model``), then unload every other
runtime-loaded adapter, so one vLLM server serves one agent's champion. A rollback loads
the older adapter again. The request shapes are checked against the vLLM release the GPU
image pins (tests/unit/registry/data/vllm-lora-api.json).

Either way a failure raises :class:`DeployError`: the promotion stays committed and
unannounced, the server keeps what it served, and the announcement is retried.
Calls go straight to the URL (no proxy from the environment): these are in-cluster or
loopback addresses.
"""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from typing import Any

import orjson

from rlstream.registry.errors import DeployError
from rlstream.serving.adapter import ADAPTER_PATH, AdapterSwap

VLLM_LOAD = "/v1/load_lora_adapter"
VLLM_UNLOAD = "/v1/unload_lora_adapter"

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _parse(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode(errors="replace").strip()


def _call(
    method: str, url: str, body: dict[str, Any] | None, timeout: float, token: str | None
) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = orjson.dumps(body) if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with _OPENER.open(req, timeout=timeout) as res:
            return int(res.status), _parse(res.read())
    except urllib.error.HTTPError as exc:
        return exc.code, _parse(exc.read())
    except (urllib.error.URLError, OSError) as exc:
        raise DeployError(f"{url} unreachable: {getattr(exc, 'reason', exc)}") from exc


def _message(answer: Any) -> str:
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        return str(answer["error"].get("message", answer))
    return str(answer)[:500]


class ServeTarget:
    """Hot-swap ``rlstream serve`` (``RLSTREAM_DEPLOY_SERVE_URL``)."""

    name = "serve"

    def __init__(self, url: str, *, timeout_s: float = 300.0, token: str | None = None) -> None:
        self.url, self.timeout_s, self.token = url.rstrip("/"), timeout_s, token

    def ref(self) -> str | None:
        return self.url

    async def deploy(
        self, *, agent: str, model_id: str, model_path: str | None, promotion_id: str
    ) -> None:
        ask = AdapterSwap(model_id=model_id, model_path=model_path, promotion_id=promotion_id)
        url = self.url + ADAPTER_PATH
        status, answer = await asyncio.to_thread(
            _call, "POST", url, ask.model_dump(), self.timeout_s, self.token
        )
        if status != 200:
            raise DeployError(
                f"rlstream serve at {self.url} did not swap to {model_id[:12]} ({status}):"
                f" {_message(answer)}; it keeps serving the previous model"
            )


def vllm_load_request(model_id: str, model_path: str) -> dict[str, Any]:
    """The body of vLLM's ``POST /v1/load_lora_adapter`` (LoadLoRAAdapterRequest)."""
    return {"lora_name": model_id, "lora_path": model_path}


def vllm_unload_request(lora_name: str) -> dict[str, Any]:
    """The body of vLLM's ``POST /v1/unload_lora_adapter`` (UnloadLoRAAdapterRequest)."""
    return {"lora_name": lora_name}


class VllmTarget:
    """Load the champion's adapter into a vLLM server at runtime (``RLSTREAM_DEPLOY_VLLM_URL``)."""

    name = "vllm"

    def __init__(self, url: str, *, timeout_s: float = 300.0, api_key: str | None = None) -> None:
        self.url, self.timeout_s, self.api_key = url.rstrip("/"), timeout_s, api_key

    def ref(self) -> str | None:
        return self.url

    async def _call(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
        return await asyncio.to_thread(
            _call, method, self.url + path, body, self.timeout_s, self.api_key
        )

    async def deploy(
        self, *, agent: str, model_id: str, model_path: str | None, promotion_id: str
    ) -> None:
        if model_path:
            status, answer = await self._call(
                "POST", VLLM_LOAD, vllm_load_request(model_id, model_path)
            )
            again = status == 400 and "already been loaded" in _message(answer)
            if status != 200 and not again:  # a retried announcement finds it loaded: fine
                raise DeployError(
                    f"vLLM at {self.url} did not load {model_id[:12]} from {model_path}"
                    f" ({status}): {_message(answer)}; it keeps serving what it served"
                )
        status, listed = await self._call("GET", "/v1/models", None)
        if status != 200 or not isinstance(listed, dict):
            raise DeployError(f"vLLM at {self.url}: GET /v1/models answered {status}")
        stale = [
            str(card["id"])
            for card in listed.get("data", [])
            if card.get("parent") and card.get("id") != model_id  # a LoRA card names its base
        ]
        for name in stale:
            status, answer = await self._call("POST", VLLM_UNLOAD, vllm_unload_request(name))
            if status not in (200, 404):  # 404: already gone
                raise DeployError(
                    f"vLLM at {self.url} loaded {model_id[:12]} but did not unload {name}"
                    f" ({status}): {_message(answer)}"
                )
