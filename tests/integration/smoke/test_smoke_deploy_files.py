"""skaffold.yaml and the Dockerfiles parse and point at files that exist (skaffold needs Docker)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[3]


def test_skaffold_references_existing_files() -> None:
    cfg = yaml.safe_load((ROOT / "skaffold.yaml").read_text())
    assert cfg["apiVersion"].startswith("skaffold/v4") and cfg["kind"] == "Config"
    artifacts = cfg["build"]["artifacts"]
    assert {a["image"] for a in artifacts} == {"rlstream", "rlstream-gpu"}
    for a in artifacts:
        ctx = ROOT / a.get("context", ".")
        assert (ctx / a["docker"]["dockerfile"]).is_file(), a
    for rel in cfg["manifests"]["helm"]["releases"]:
        chart = ROOT / rel["chartPath"]
        assert (chart / "Chart.yaml").is_file()
        for vf in rel.get("valuesFiles", []):
            assert (ROOT / vf).is_file(), vf
        # Every value skaffold sets must exist in the chart's values (catches renames).
        values = yaml.safe_load((chart / "values.yaml").read_text())
        for key in rel.get("setValueTemplates", {}):
            node = values
            for part in key.split("."):
                assert part in node, f"{key} not in values.yaml"
                node = node[part]


def _instructions(path: Path) -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", path.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.gpu", "Dockerfile.trainer-cpu"])
def test_dockerfiles_parse_and_copy_existing_paths(name: str) -> None:
    known = {"FROM", "ARG", "ENV", "RUN", "COPY", "WORKDIR", "USER", "EXPOSE", "ENTRYPOINT", "CMD"}
    ins = _instructions(ROOT / "docker" / name)
    assert ins[0][0] in ("FROM", "ARG")
    assert {w for w, _ in ins} <= known
    for word, rest in ins:
        if word == "COPY" and not rest.startswith("--from"):
            for src in rest.split()[:-1]:
                assert (ROOT / src).exists(), f"{name}: COPY source {src} missing"


def test_gpu_image_pins_openrlhf_exactly() -> None:
    text = (ROOT / "docker" / "Dockerfile.gpu").read_text()
    m = re.search(r"ARG OPENRLHF_VERSION=(\S+)", text)
    assert m and re.fullmatch(r"\d+\.\d+\.\d+", m.group(1))
    assert "openrlhf[vllm]==${OPENRLHF_VERSION}" in text
