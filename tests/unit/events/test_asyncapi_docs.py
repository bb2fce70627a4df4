"""The committed AsyncAPI documents are what the apps generate today."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("service", ["ingest", "grader", "curator", "evaluator"])
def test_asyncapi_doc_is_current(service: str, tmp_path: Path) -> None:
    out = tmp_path / f"{service}.yaml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLSTREAM_")}
    env["RLSTREAM_KAFKA_BOOTSTRAP"] = "kafka:9092"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "faststream",
            "docs",
            "gen",
            f"rlstream.services.{service}.app:app",
            "--yaml",
            "--out",
            str(out),
        ],
        check=True,
        env=env,
        capture_output=True,
        cwd=tmp_path,
    )
    committed = (ROOT / "docs" / "asyncapi" / f"{service}.yaml").read_text()
    # FastStream orders channels by hash, so compare the documents, not their text
    fresh = yaml.safe_load(out.read_text())
    assert fresh == yaml.safe_load(committed), (
        "docs/asyncapi is stale: run `rlstream services asyncapi`"
    )
    assert "schema_version" in committed and "rlstream." in committed
