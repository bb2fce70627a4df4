"""The PII key reaches every pod from the chart's Secret (issue 20), by `helm template`: the
per-key form references it (default key name RLSTREAM_PII_KEY, or the one named), the
string form passes it with the whole Secret, and only the no-Secret demo runs without."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.helm

CHART = Path(__file__).resolve().parents[3] / "charts" / "rlstream"
HOOKS = {"migrations": {"hook": True}, "topics": {"provision": "hook", "replicationFactor": 1}}


def _render(helm_bin: Path, values: dict[str, Any]) -> list[dict[str, Any]]:
    res = subprocess.run(
        [str(helm_bin), "template", "rls", str(CHART), "--namespace", "ml", "--values", "-"],
        input=json.dumps(values), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return [d for d in yaml.safe_load_all(res.stdout) if d]


def _containers(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each Deployment's and hook Job's container, by object name."""
    out = {}
    for d in docs:
        if d["kind"] in ("Deployment", "Job"):
            [c] = d["spec"]["template"]["spec"]["containers"]
            out[d["metadata"]["name"]] = c
    return out


def _env(c: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}


def _training_env(docs: list[dict[str, Any]]) -> dict[str, Any]:
    [cm] = [d for d in docs if d["metadata"]["name"] == "rls-rlstream-training"]
    extra = json.loads(cm["data"].get("RLSTREAM_K8S_EXTRA_ENV", "[]"))
    return {e["name"]: e.get("valueFrom") for e in extra}


@pytest.mark.parametrize(("keys", "key"), [({"piiKey": "pii-key"}, "pii-key"), ({}, None)])
def test_the_per_key_form_references_the_pii_key(
    helm_bin: Path, keys: dict[str, str], key: str | None
) -> None:
    values = {"existingSecret": {"name": "corp", "keys": {"postgresDsn": "dsn", **keys}}}
    docs = _render(helm_bin, values | HOOKS)
    ref = {"secretKeyRef": {"name": "corp", "key": key or "RLSTREAM_PII_KEY"}}
    containers = _containers(docs)
    assert {n for n in containers if n.endswith(("-migrate", "-topics"))}  # hooks rendered
    assert len(containers) == 5
    for name, c in containers.items():
        env = _env(c)
        assert env["RLSTREAM_PII_KEY"] == ref, name
        assert "RLSTREAM_EMBEDDED_POSTGRES" not in env, name
    assert _training_env(docs)["RLSTREAM_PII_KEY"] == ref


def test_the_string_form_passes_it_with_the_secret(helm_bin: Path) -> None:
    docs = _render(helm_bin, {"existingSecret": "rls-db"})
    for name, c in _containers(docs).items():
        assert {"secretRef": {"name": "rls-db"}} in c["envFrom"], name
        assert "RLSTREAM_PII_KEY" not in _env(c)  # from the Secret, under its own name
        assert "RLSTREAM_EMBEDDED_POSTGRES" not in _env(c)


def test_only_the_demo_runs_without_a_key(helm_bin: Path) -> None:
    for name, c in _containers(_render(helm_bin, {})).items():
        env = _env(c)
        assert "RLSTREAM_PII_KEY" not in env, name
        assert env["RLSTREAM_EMBEDDED_POSTGRES"] == "true", name  # unkeyed stand-ins


def test_the_schema_takes_pii_key_and_refuses_a_misspelling(helm_bin: Path) -> None:
    bad = {"existingSecret": {"name": "corp", "keys": {"piiKEY": "k"}}}
    res = subprocess.run(
        [str(helm_bin), "template", "rls", str(CHART), "--values", "-"],
        input=json.dumps(bad), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode != 0 and "piiKEY" in res.stderr
