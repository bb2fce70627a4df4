"""`skaffold render` (skaffold v2 built from the Go module proxy by ensure-skaffold.sh) gives
exactly the objects `helm template` renders with the same values and image tags, so the dev
loop deploys what CI tests. Offline, with fixed build artifacts: no Docker, no registry."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = [pytest.mark.helm, pytest.mark.skaffold]
ROOT = Path(__file__).resolve().parents[3]
SVC = "rlstream:t1@sha256:" + "1" * 64
GPU = "rlstream-gpu:t2@sha256:" + "2" * 64


def _objects(text: str) -> dict[tuple[str, str], Any]:
    docs = [d for d in yaml.safe_load_all(text) if d]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def test_skaffold_render_equals_helm_template(
    skaffold_bin: Path, helm_bin: Path, tmp_path: Path
) -> None:
    art = tmp_path / "artifacts.json"
    art.write_text(
        json.dumps(
            {
                "builds": [
                    {"imageName": "rlstream", "tag": SVC},
                    {"imageName": "rlstream-gpu", "tag": GPU},
                ]
            }
        )
    )
    env = {**os.environ, "PATH": f"{helm_bin.parent}:{os.environ['PATH']}",
           "SKAFFOLD_UPDATE_CHECK": "false", "HOME": str(tmp_path)}  # fmt: skip
    sk = subprocess.run(
        [str(skaffold_bin), "render", "--offline=true", "--digest-source=tag",
         f"--build-artifacts={art}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert sk.returncode == 0, sk.stderr
    repo, _, tag = SVC.partition(":")
    grepo, _, gtag = GPU.partition(":")
    hl = subprocess.run(
        [str(helm_bin), "template", "rlstream", str(ROOT / "charts" / "rlstream"),
         "-f", str(ROOT / "charts" / "rlstream" / "values.yaml"),
         "--set", f"image.repository={repo}", "--set", f"image.tag={tag}",
         "--set", f"training.image.repository={grepo}", "--set", f"training.image.tag={gtag}"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert hl.returncode == 0, hl.stderr
    rendered, templated = _objects(sk.stdout), _objects(hl.stdout)
    assert len(templated) > 10
    assert rendered.keys() == templated.keys()
    for key, obj in templated.items():
        assert rendered[key] == obj, key
    images = {
        c["image"]
        for o in templated.values()
        if o["kind"] == "Deployment"
        for c in o["spec"]["template"]["spec"]["containers"]
    }
    assert images == {SVC}
    assert templated[("ConfigMap", "rlstream-training")]["data"]["RLSTREAM_K8S_IMAGE"] == GPU
