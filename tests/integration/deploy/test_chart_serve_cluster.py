"""The chart's `rlstream serve` Deployment on the real single-node cluster: installed with
serve.enabled (the CPU trainer image, the bundled small base model), its pod becomes Ready
through the chart's probes, answers /v1/models and a chat completion through its Service,
logs the exchange to the raw topic, and `helm test` waits for its /readyz. The image is the
harness's CPU trainer image as built (docker/Dockerfile.trainer-cpu installs the serve
extra), with nothing mounted in.

Then the flywheel's last link on the same release: a pod made from the chart's evaluator
Deployment (its env, Secret, volumes: RLSTREAM_DEPLOY_TARGET=serve and the serve Service's
URL, as the chart renders them for serve.hotSwap) registers adapters on the artifacts
volume and runs `rlstream promote`: the serve pod hot-swaps to each promoted model while a
client keeps chatting (no request fails), a rollback swaps back, a corrupt adapter keeps
the champion serving; the conversations the promoted model served reach PostgreSQL through
the chart's ingest and `rlstream lineage MODEL` lists them."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from chart_install import install_chart
from kube_api import Api, pod_logs
from typer.testing import CliRunner

from rlstream.events import topics
from rlstream.lineage.tree import served_by
from rlstream.services.cli.main import app
from rlstream.storage import Store
from rlstream_testkit.adapters import corrupt_adapter, make_adapter
from rlstream_testkit.stack import read_topic

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.helm,
    pytest.mark.timeout(1500),
    pytest.mark.filterwarnings("ignore::FutureWarning"),  # peft saving the test's adapters
]
NS = "rls-serve"
REL = "srv"
SERVE = f"{REL}-rlstream-serve"
EVALUATOR = f"{REL}-rlstream-evaluator"
AGENT = "support-bot"
BOUND_S = 120.0  # from `rlstream promote` to the serve pod answering with the new model id
CLIENT = """
import json, os, urllib.request
base = "http://%s:%s" % (os.environ["SRV_RLSTREAM_SERVE_SERVICE_HOST"], os.environ["SRV_RLSTREAM_SERVE_SERVICE_PORT"])
with urllib.request.urlopen(base + "/v1/models", timeout=60) as r:
    print("MODELS", r.status, r.read().decode(), flush=True)
body = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4,
        "metadata": {"source": "chart-serve-test"}}
req = urllib.request.Request(base + "/v1/chat/completions", data=json.dumps(body).encode(),
                             headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=300) as r:
    print("CHAT", r.status, r.headers["X-Conversation-Id"], r.read().decode(), flush=True)
"""

# Runs in the promoter pod (the evaluator's image, env and volumes). Prints RESULT {json}.
CHAIN = """
import asyncio, json, os, subprocess, threading, time, urllib.request
from rlstream.registry import Registry
from rlstream.storage import Store

URL, AGENT = os.environ["RLSTREAM_DEPLOY_SERVE_URL"], os.environ["HOTSWAP_AGENT"]
ROOT = os.environ["HOTSWAP_DIR"]
print("TARGET", os.environ["RLSTREAM_DEPLOY_TARGET"], URL, flush=True)

async def register():
    store = await Store.connect(os.environ["RLSTREAM_POSTGRES_DSN"], max_size=2)
    try:
        reg = Registry(store)
        return [(await reg.register(ROOT + "/" + n, agent=AGENT)).model_id for n in "ab"] + [
            (await reg.register(ROOT + "/bad", agent=AGENT)).model_id]
    finally:
        await store.close()

def chat(tag):
    body = {"messages": [{"role": "user", "content": "Where is my order?"}], "max_tokens": 4,
            "metadata": {"source": "hotswap-" + tag, "agent": AGENT}}
    req = urllib.request.Request(URL + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())["model"], r.headers["X-Conversation-Id"]

def promote(*args):
    t = time.monotonic()
    r = subprocess.run(["rlstream", "promote", *args], capture_output=True, text=True, timeout=600)
    said = " ".join((r.stdout + r.stderr).split())
    print("PROMOTE", args, r.returncode, said[:600], flush=True)
    return r.returncode, said, round(time.monotonic() - t, 2)

a, b, bad = asyncio.run(register())
out = {"ids": [a, b, bad], "steps": {}, "load": {"ok": 0, "failed": [], "models": []}}
out["before"] = chat("before")[0]
stop = threading.Event()
def load():  # a client chatting through every swap
    while not stop.is_set():
        try:
            model, _ = chat("load")
            out["load"]["ok"] += 1
            if model not in out["load"]["models"]:
                out["load"]["models"].append(model)
        except Exception as exc:
            out["load"]["failed"].append(repr(exc)[:200])
loader = threading.Thread(target=load)
loader.start()
served_by_a = []
for step, args in (("promote a", (a, "--override")), ("promote b", (b, "--override")),
                   ("rollback", ("--rollback", "--agent", AGENT)),
                   ("corrupt", (bad, "--override"))):
    rc, said, secs = promote(*args)
    model, cid = chat(step.replace(" ", "-"))
    if model == a:
        served_by_a.append(cid)
    out["steps"][step] = {"rc": rc, "said": said[-400:], "seconds": secs, "serving": model}
stop.set()
loader.join()
out["served_by_a"] = served_by_a
print("RESULT " + json.dumps(out), flush=True)
"""


def _ready(pod: dict[str, Any]) -> bool:
    conds = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def _client_pod(api: Api, image: str) -> str:
    """Run CLIENT in a pod of the release (the NetworkPolicy admits its label); its log."""
    spec = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 10001},
        "containers": [
            {
                "name": "c",
                "image": image,
                "imagePullPolicy": "Never",
                "command": ["python3", "-c", CLIENT],
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
            }
        ],
    }
    return _run_pod(api, "serve-client", spec, 600)


def _promoter_spec(api: Api) -> dict[str, Any]:
    """The evaluator Deployment's pod spec running CHAIN instead of the service. The harness
    cluster has no DNS add-on: the serve Service's name resolves through hostAliases to its
    ClusterIP (what cluster DNS answers), so the URL is the one the chart renders."""
    dep = api.ok("GET", f"/apis/apps/v1/namespaces/{NS}/deployments/{EVALUATOR}")
    spec = dep["spec"]["template"]["spec"]
    [c] = spec["containers"]
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    assert env["RLSTREAM_DEPLOY_TARGET"] == "serve", env
    assert env["RLSTREAM_DEPLOY_SERVE_URL"] == f"http://{SERVE}:8000", env
    svc = api.ok("GET", f"/api/v1/namespaces/{NS}/services/{SERVE}")
    drop = ("livenessProbe", "readinessProbe", "startupProbe", "ports", "args")
    c = {k: v for k, v in c.items() if k not in drop}
    c["command"] = ["python3", "-c", CHAIN]
    c["env"] = [
        *c.get("env", []),
        {"name": "HOTSWAP_DIR", "value": "/var/lib/rlstream/hotswap"},
        {"name": "HOTSWAP_AGENT", "value": AGENT},
    ]
    spec = {**spec, "containers": [c], "restartPolicy": "Never"}
    spec["hostAliases"] = [{"ip": svc["spec"]["clusterIP"], "hostnames": [SERVE]}]
    return spec


def _run_pod(api: Api, name: str, spec: dict[str, Any], timeout: float) -> str:
    """Run a pod of the release (the NetworkPolicy admits its label) to the end; its log."""
    api.ok(
        "POST",
        f"/api/v1/namespaces/{NS}/pods",
        {
            "metadata": {
                "name": name,
                "labels": {"app.kubernetes.io/instance": REL, "app.kubernetes.io/component": "t"},
            },
            "spec": spec,
        },
    )

    def done() -> str | None:
        pod = api.ok("GET", f"/api/v1/namespaces/{NS}/pods/{name}")
        phase = pod.get("status", {}).get("phase")
        return phase if phase in ("Succeeded", "Failed") else None

    phase = api.wait(done, timeout, f"pod {name} to finish", every=2)
    log = api.ok("GET", f"/api/v1/namespaces/{NS}/pods/{name}/log")
    assert phase == "Succeeded", log
    return str(log)


def test_serve_deployment_on_the_cluster(
    cluster: Any, cluster_kafka: Any, cluster_postgres: Any, helm_bin: Path, tmp_path_factory: Any
) -> None:
    t0 = time.monotonic()
    cluster.load_images("TRAINER_IMAGE")
    print(f"[serve] trainer image in containerd after {time.monotonic() - t0:.0f}s")
    cluster_kafka.create_topics(list(topics.ALL_TOPICS))
    repo, _, tag = cluster.images["TRAINER_IMAGE"].rpartition(":")
    rel = install_chart(
        cluster, cluster_kafka, cluster_postgres, helm_bin, tmp_path_factory, NS, REL,
        {
            "serve": {
                "enabled": True,
                "agent": AGENT,
                "modelId": "chart-base",
                "resources": {"requests": {"cpu": "100m", "memory": "512Mi"},
                              "limits": {"memory": "3Gi"}},
            },
            # rendered for its deploy settings (serve.hotSwap), run as the promoter pod
            "services": {"evaluator": {"enabled": True, "image": {"repository": repo, "tag": tag}}},
        },
    )  # fmt: skip
    api = rel.api
    try:
        print(f"[serve] installed (--wait: every pod Ready) after {time.monotonic() - t0:.0f}s")
        sel = f"app.kubernetes.io/instance={REL},app.kubernetes.io/component=serve"
        [pod] = api.ok("GET", f"/api/v1/namespaces/{NS}/pods?labelSelector={sel}")["items"]
        assert _ready(pod), pod_logs(api, NS, sel)
        spec = pod["spec"]
        assert spec["serviceAccountName"] == SERVE
        assert spec["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
        assert spec["containers"][0]["image"].endswith(cluster.images["TRAINER_IMAGE"])

        log = _client_pod(api, cluster.images["RLSTREAM_IMAGE"])
        print("[serve] client:", log)
        models = next(line for line in log.splitlines() if line.startswith("MODELS "))
        status, body = models.split(" ", 2)[1:]
        assert status == "200" and [m["id"] for m in json.loads(body)["data"]] == ["chart-base"]
        chat = next(line for line in log.splitlines() if line.startswith("CHAT "))
        status, conv_id, body = chat.split(" ", 3)[1:]
        answer = json.loads(body)
        assert status == "200" and answer["model"] == "chart-base", answer
        assert answer["choices"][0]["message"]["role"] == "assistant"

        # --log-kafka: the exchange is on the raw topic, tagged with the serving model id.
        def logged() -> list[dict[str, Any]]:
            recs = asyncio.run(read_topic(cluster_kafka.bootstrap, topics.CONVERSATIONS_RAW))
            mine = [json.loads(r.value) for r in recs]
            return [m for m in mine if m.get("conversation_id") == conv_id]

        [record] = api.wait(logged, 60, "the served conversation on the raw topic", every=2)
        assert record["model"] == "chart-base" and record["agent"] == "support-bot"

        res = rel.helm("test", REL, "--logs", "--timeout", "4m")
        assert f"{SERVE} http://" in res.stdout and ":8000/readyz 200" in res.stdout, res.stdout
        print(f"[serve] helm test passed after {time.monotonic() - t0:.0f}s")
        _hotswap_chain(rel)
        print(f"[serve] done after {time.monotonic() - t0:.0f}s")
    except BaseException:
        print(pod_logs(api, NS, "app.kubernetes.io/component=serve"))
        raise
    finally:
        rel.uninstall()


def _hotswap_chain(rel: Any) -> None:
    """Promotions through the chart's deploy wiring hot-swap the serve pod (module doc)."""
    api = rel.api
    pv = api.ok("GET", f"/api/v1/persistentvolumes/{NS}-artifacts")
    root = Path(pv["spec"]["hostPath"]["path"]) / "hotswap"  # the pods' /var/lib/rlstream
    a = make_adapter(root / "a", 1)
    make_adapter(root / "b", 2)
    corrupt_adapter(root / "bad", a)
    for p in (root, *root.rglob("*")):
        shutil.chown(p, 10001, 10001)
    log = _run_pod(api, "promoter", _promoter_spec(api), 900)
    print("[serve] promoter:", log[-4000:])
    res = json.loads(next(x for x in log.splitlines() if x.startswith("RESULT "))[7:])
    a_id, b_id, _ = res["ids"]
    steps = res["steps"]
    assert res["before"] == "chart-base"
    for step, serving in (("promote a", a_id), ("promote b", b_id), ("rollback", a_id)):
        assert steps[step]["rc"] == 0, steps[step]
        assert f"deployed to serve http://{SERVE}:8000" in steps[step]["said"], steps[step]
        assert steps[step]["serving"] == serving, (step, steps[step])
        assert steps[step]["seconds"] < BOUND_S, steps
    bad = steps["corrupt"]
    assert bad["rc"] != 0 and "did not swap" in bad["said"], bad
    assert bad["serving"] == a_id  # the champion the load failed to replace keeps serving
    load = res["load"]
    assert load["failed"] == [] and load["ok"] > 0, load  # no request failed across 4 swaps
    assert set(load["models"]) <= {"chart-base", a_id, b_id}, load
    print(
        "[serve] PROMOTE_TO_SERVING_S",
        {k: v["seconds"] for k, v in steps.items()},
        f"under load: {load['ok']} chats, 0 failed",
    )

    # the chart's ingest stored what model a served: lineage links them to it
    async def served() -> set[str]:
        store = await Store.connect(rel.dsn, max_size=2)
        try:
            return {str(c["conversation_id"]) for c in await served_by(store, a_id)}
        finally:
            await store.close()

    want = set(res["served_by_a"])
    assert len(want) == 3  # after "promote a", "rollback" and the failed swap
    api.wait(lambda: want <= asyncio.run(served()), 120, "the served conversations stored")
    out = CliRunner().invoke(app, ["lineage", a_id, "--dsn", rel.dsn, "--json"])
    assert out.exit_code == 0, out.output
    tree = json.loads(out.output)
    assert want <= {c["conversation_id"] for c in tree["served"]}, tree["served"]
