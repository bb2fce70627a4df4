"""``rlstream serve`` as a real process on the small model, hot-swapped under load: four
clients (streaming and not) send requests for ~20 s while the adapter is swapped twice and
a corrupt adapter is refused; no request fails or goes unanswered, every answer names the
model that produced it, and the swap latency is measured (printed; written as JSON to
``$RLSTREAM_HOTSWAP_REPORT`` when set)."""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from hotswap_helpers import corrupt_adapter, make_adapter, start_server, stop_server

pytestmark = [pytest.mark.train, pytest.mark.filterwarnings("ignore::FutureWarning")]

CLIENTS, SECONDS = 4, 20.0


@pytest.fixture(scope="module")
def adapters(base_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("adapters")
    a = make_adapter(root / "a", 1)
    return {"a": a, "b": make_adapter(root / "b", 2), "corrupt": corrupt_adapter(root / "c", a)}


@pytest.fixture(scope="module")
def server(base_model: Path) -> Iterator[str]:
    proc, url = start_server(base_model, "m-base")
    try:
        yield url
    finally:
        stop_server(proc)


def _client(url: str, i: int, stop: threading.Event, out: list[dict[str, Any]]) -> None:
    with httpx.Client(timeout=120) as http:
        n = 0
        while not stop.is_set():
            n += 1
            stream = (i + n) % 2 == 1
            body = {
                "messages": [{"role": "user", "content": f"Say a word ({i}-{n})."}],
                "max_tokens": 4,
                "stream": stream,
            }
            rec: dict[str, Any] = {"client": i, "stream": stream, "t0": time.monotonic()}
            try:
                res = http.post(url + "/v1/chat/completions", json=body)
                rec["status"] = res.status_code
                if stream:
                    events = [e[6:] for e in res.text.split("\n\n") if e.startswith("data: ")]
                    rec["done"] = events[-1:] == ["[DONE]"]
                    models = {orjson.loads(e)["model"] for e in events[:-1]}
                    rec["model"] = models.pop() if len(models) == 1 else sorted(models)
                else:
                    rec["done"] = True
                    rec["model"] = res.json()["model"]
            except Exception as exc:  # counted as failed below
                rec["status"], rec["error"] = 0, repr(exc)
            rec["t1"] = time.monotonic()
            out.append(rec)


def test_hot_swaps_under_load_fail_and_lose_no_request(
    server: str, adapters: dict[str, Path]
) -> None:
    stop = threading.Event()
    seen: list[dict[str, Any]] = []
    threads = [
        threading.Thread(target=_client, args=(server, i, stop, seen)) for i in range(CLIENTS)
    ]
    t_start = time.monotonic()
    for t in threads:
        t.start()
    swaps = []
    plan = [(5.0, "m-a", "a"), (10.0, "m-corrupt", "corrupt"), (12.0, "m-b", "b")]
    for at, mid, name in plan:
        time.sleep(max(0.0, t_start + at - time.monotonic()))
        t0 = time.monotonic()
        ask = {"model_id": mid, "model_path": str(adapters[name]), "promotion_id": f"p-{mid}"}
        res = httpx.post(server + "/v1/rlstream/adapter", json=ask, timeout=300)
        swaps.append((mid, res.status_code, res.json(), t0, time.monotonic()))
    time.sleep(max(3.0, t_start + SECONDS - time.monotonic()))  # some requests on m-b
    stop.set()
    for t in threads:
        t.join(180)
    assert not any(t.is_alive() for t in threads), "a client never got its answer"

    ok = [s for s in swaps if s[1] == 200]
    assert [(s[0], s[2]["previous"]) for s in ok] == [("m-a", "m-base"), ("m-b", "m-a")]
    (bad,) = [s for s in swaps if s[1] != 200]
    assert bad[1] == 422 and bad[2]["error"]["type"] == "adapter_load_failed"

    failed = [r for r in seen if r["status"] != 200 or not r["done"]]
    assert failed == [], failed[:3]
    assert all(isinstance(r["model"], str) for r in seen), "a stream changed model mid-answer"
    # a request sent after a swap answered gets the new model; the corrupt one never served
    (_, _, _, a_sent, a_done), (_, _, _, b_sent, b_done) = ok
    windows = [(t_start, a_sent, "m-base"), (a_done, b_sent, "m-a"), (b_done, 1e18, "m-b")]
    for lo, hi, mid in windows:
        inside = {r["model"] for r in seen if lo < r["t0"] < hi}
        assert inside == {mid}, (mid, inside)
    assert {r["model"] for r in seen} == {"m-base", "m-a", "m-b"}
    assert httpx.get(server + "/v1/models").json()["data"][0]["id"] == "m-b"
    metrics = httpx.get(server + "/metrics").text
    assert 'rlstream_serve_adapter_swaps_total{result="ok"} 2.0' in metrics
    assert 'rlstream_serve_adapter_swaps_total{result="failed"} 1.0' in metrics

    def lat(rows: list[dict[str, Any]]) -> dict[str, float]:
        d = sorted(r["t1"] - r["t0"] for r in rows)
        return {
            "n": len(d),
            "p50_s": round(statistics.median(d), 3),
            "max_s": round(d[-1], 3),
        }

    during = [r for r in seen if any(r["t1"] > s[3] and r["t0"] < s[4] for s in ok)]
    report = {
        "clients": CLIENTS,
        "seconds": round(time.monotonic() - t_start, 1),
        "requests": len(seen),
        "failed": len(failed),
        "swaps": [
            {
                "model_id": s[0],
                "status": s[1],
                "load_s": s[2].get("load_s"),
                "call_s": round(s[4] - s[3], 3),
            }
            for s in swaps
        ],
        "request_latency_all": lat(seen),
        "request_latency_during_swaps": lat(during) if during else None,
    }
    print("HOTSWAP", orjson.dumps(report).decode())
    if path := os.environ.get("RLSTREAM_HOTSWAP_REPORT"):
        Path(path).write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
