"""Hot swap of ``rlstream serve``'s model: a failed load keeps the previous model serving and
is counted; requests in flight during a swap finish on the model they started on and none
fails; the admin call's answers (200 / 422 / 401 / 400) and ``/v1/models`` after a swap.
The real model under load is exercised in tests/integration/training/test_serve_hotswap.py."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from starlette.testclient import TestClient

from rlstream.services.cli.servehttp.app import State, build_app
from rlstream.services.cli.servehttp.engine import Output
from rlstream.services.cli.servehttp.swap import AdapterLoadError, Swapper, locate
from rlstream.serving.adapter import ADAPTER_PATH, AdapterSwap
from rlstream.serving.api import ChatRequest

pytestmark = pytest.mark.unit


def _swaps(result: str) -> float:
    return REGISTRY.get_sample_value("rlstream_serve_adapter_swaps_total", {"result": result}) or 0


class Tagged:
    """Answers its own tag, slowly, so a swap lands while requests are in flight."""

    def __init__(self, tag: str, delay: float = 0.0) -> None:
        self.tag, self.delay = tag, delay

    def complete(self, req: ChatRequest, max_new: int) -> Output:
        time.sleep(self.delay)
        return Output(self.tag, prompt_tokens=3, completion_tokens=1, finished=True)

    def stream(self, req: ChatRequest, max_new: int) -> tuple[Iterator[str], list[Output]]:
        time.sleep(self.delay)
        return iter([self.tag]), [self.complete(req, max_new)]


def _adapter(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}")
    return folder


def test_a_failed_load_keeps_the_previous_model_and_is_counted() -> None:
    async def go() -> None:
        sw: Swapper[str] = Swapper()
        await sw.swap("m-old", lambda: "old", initial=True)
        failed = _swaps("failed")

        def corrupt() -> str:
            raise ValueError("invalid safetensors header")

        with pytest.raises(AdapterLoadError) as err:
            await sw.swap("m-bad", corrupt, source="/runs/bad")
        assert err.value.status == 422 and "invalid safetensors header" in str(err.value)
        assert sw.current is not None and (sw.current.model_id, sw.current.engine) == (
            "m-old",
            "old",
        )
        assert _swaps("failed") == failed + 1

        def oom() -> str:
            raise RuntimeError("CUDA out of memory")

        with pytest.raises(AdapterLoadError) as err:
            await sw.swap("m-big", oom, source="/runs/big")
        assert err.value.status == 500 and sw.current.model_id == "m-old"
        done = await sw.swap("m-new", lambda: "new", source="/runs/new", promotion_id="p-1")
        assert (done.model_id, done.previous) == ("m-new", "m-old") and done.load_s >= 0
        assert sw.current.engine == "new" and sw.current.promotion_id == "p-1"
        again = await sw.swap("m-new", lambda: "never loaded", source="/runs/new")
        assert (again.previous, again.load_s, sw.current.engine) == ("m-new", 0.0, "new")

    asyncio.run(go())


def test_requests_in_flight_finish_on_the_model_they_started_on() -> None:
    async def go() -> None:
        sw: Swapper[str] = Swapper()
        await sw.swap("m-1", lambda: "one", initial=True)
        release = threading.Event()

        def slow_load() -> str:
            release.wait(5)
            return "two"

        async def request() -> tuple[str, str]:
            served = sw.current  # what the app does once per request
            assert served is not None
            await asyncio.sleep(0.05)
            return served.model_id, served.engine

        swap = asyncio.create_task(sw.swap("m-2", slow_load, source="/a2"))
        await asyncio.sleep(0.05)
        during = await asyncio.gather(*(request() for _ in range(8)))  # the load runs meanwhile
        assert set(during) == {("m-1", "one")}
        pending = [asyncio.create_task(request()) for _ in range(4)]
        release.set()
        await swap
        assert set(await asyncio.gather(*pending)) == {("m-1", "one")}  # started before
        assert await request() == ("m-2", "two")

    asyncio.run(go())


def test_locate_refuses_what_is_not_an_adapter(tmp_path: Path) -> None:
    assert locate(None) == (None, None)
    assert locate(str(_adapter(tmp_path / "a"))) == (None, tmp_path / "a")
    (tmp_path / "run" / "adapter").mkdir(parents=True)
    (tmp_path / "run" / "adapter" / "adapter_config.json").write_text("{}")
    assert locate(str(tmp_path / "run")) == (None, tmp_path / "run" / "adapter")
    for bad in (tmp_path / "gone", tmp_path / "run" / "adapter" / "adapter_config.json"):
        with pytest.raises(AdapterLoadError, match="not a folder"):
            locate(str(bad))
    (tmp_path / "empty").mkdir()
    with pytest.raises(AdapterLoadError, match="holds no adapter"):
        locate(str(tmp_path / "empty"))


def _app(engines: dict[str | None, Any], token: str | None = None) -> tuple[State, TestClient]:
    def swap_load(full: Path | None, adapter: Path | None) -> Any:
        found = engines[adapter.name if adapter else None]
        if isinstance(found, Exception):
            raise found
        return found

    st = State(
        model_id="m-base",
        load=lambda: engines[None],
        sink=None,
        swap_load=swap_load,
        admin_token=token,
    )
    return st, TestClient(build_app(st))


def _ready(c: TestClient) -> None:
    for _ in range(500):
        if c.get("/readyz").status_code == 200:
            return
        time.sleep(0.01)
    raise AssertionError("never ready")


BODY = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


def test_admin_swap_answers_and_keeps_serving_on_failure(tmp_path: Path) -> None:
    good, bad = _adapter(tmp_path / "good"), _adapter(tmp_path / "bad")
    engines = {None: Tagged("base"), "good": Tagged("good"), "bad": OSError("corrupt weights")}
    st, client = _app(engines, token="s3cret")
    auth = {"Authorization": "Bearer s3cret"}
    with client as c:
        _ready(c)
        ask = {"model_id": "m-good", "model_path": str(good), "promotion_id": "p-1"}
        assert c.post(ADAPTER_PATH, json=ask).status_code == 401
        assert (
            c.post(ADAPTER_PATH, json=ask, headers={"Authorization": "Bearer x"}).status_code == 401
        )
        r = c.post(ADAPTER_PATH, json={**ask, "extra": 1}, headers=auth)
        assert r.status_code == 400
        r = c.post(ADAPTER_PATH, json=ask, headers=auth)
        assert r.status_code == 200, r.text
        body = r.json()
        assert (body["model_id"], body["previous"]) == ("m-good", "m-base") and body["load_s"] >= 0
        assert c.get("/v1/models").json()["data"][0]["id"] == "m-good"
        out = c.post("/v1/chat/completions", json=BODY).json()
        assert (out["model"], out["choices"][0]["message"]["content"]) == ("m-good", "good")
        for ask_bad in (
            {"model_id": "m-bad", "model_path": str(bad)},  # the load raises
            {"model_id": "m-gone", "model_path": str(tmp_path / "gone")},  # no such folder
        ):
            r = c.post(ADAPTER_PATH, json=ask_bad, headers=auth)
            assert r.status_code == 422, r.text
            assert r.json()["error"]["type"] == "adapter_load_failed"
        assert (
            "corrupt weights"
            in c.post(
                ADAPTER_PATH, json={"model_id": "m-bad", "model_path": str(bad)}, headers=auth
            ).json()["error"]["message"]
        )
        out = c.post("/v1/chat/completions", json=BODY).json()
        assert out["model"] == "m-good" and c.get("/readyz").status_code == 200
        back = c.post(ADAPTER_PATH, json={"model_id": "m-base", "model_path": None}, headers=auth)
        assert back.json() == {**back.json(), "model_id": "m-base", "previous": "m-good"}
        metrics = c.get("/metrics").text
        assert 'rlstream_serve_adapter_swaps_total{result="failed"}' in metrics
        assert "rlstream_serve_adapter_load_seconds_count" in metrics
    assert st.served is not None and st.served.model_id == "m-base"


def test_no_request_fails_or_changes_model_mid_answer_during_swaps(tmp_path: Path) -> None:
    a, b = _adapter(tmp_path / "a"), _adapter(tmp_path / "b")
    engines = {None: Tagged("base", 0.02), "a": Tagged("a", 0.02), "b": Tagged("b", 0.02)}
    _, client = _app(engines)
    tags = {"m-base": "base", "m-a": "a", "m-b": "b"}
    with client as c:
        _ready(c)
        stop = threading.Event()

        def hammer(i: int) -> list[tuple[int, str, str]]:
            seen = []
            while not stop.is_set():
                body = {**BODY, "stream": i % 2 == 1}
                r = c.post("/v1/chat/completions", json=body)
                if body["stream"]:
                    model = r.text.split('"model":"')[1].split('"')[0]
                    text = "".join(t for t in ("base", "a", "b") if f'"content":"{t}"' in r.text)
                else:
                    model, text = r.json()["model"], r.json()["choices"][0]["message"]["content"]
                seen.append((r.status_code, model, text))
            return seen

        with ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(hammer, i) for i in range(4)]
            for mid, folder in (("m-a", a), ("m-b", b), ("m-a", a)):
                time.sleep(0.15)
                r = c.post(ADAPTER_PATH, json={"model_id": mid, "model_path": str(folder)})
                assert r.status_code == 200, r.text
            time.sleep(0.15)
            stop.set()
            seen = [s for f in futures for s in f.result()]
    assert len(seen) > 20 and {s for s, _, _ in seen} == {200}
    assert all(tags[model] == text for _, model, text in seen)  # the id matches the model
    assert {m for _, m, _ in seen} == {"m-base", "m-a", "m-b"}


def test_the_swap_request_is_strict() -> None:
    assert AdapterSwap.model_validate({"model_id": "m"}).model_path is None
    with pytest.raises(ValueError):
        AdapterSwap.model_validate({"model_id": ""})
