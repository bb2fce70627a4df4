"""Builders for registry tests (a uniquely named module: test dirs have no __init__.py)."""

from __future__ import annotations

import json
from pathlib import Path

from rlstream.events import DeploymentEvent


class RecordingSink:
    """An EventSink that keeps what was sent; ``fail`` makes the next sends raise."""

    published = True

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes]] = []
        self.fail = 0

    async def send(self, topic: str, key: bytes, value: bytes) -> None:
        if self.fail:
            self.fail -= 1
            raise ConnectionError("broker down (test)")
        self.sent.append((topic, key, value))

    def deployments(self) -> list[DeploymentEvent]:
        return [
            DeploymentEvent.model_validate_json(v)
            for t, _, v in self.sent
            if t.endswith("rlstream.deployments.v1")
        ]


def fake_adapter(root: Path, name: str, payload: bytes | None = None) -> Path:
    """A folder shaped like a peft adapter; its bytes (hence its model id) depend on name."""
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "adapter_model.safetensors").write_bytes(payload or name.encode() * 64)
    (d / "adapter_config.json").write_text(json.dumps({"r": 8, "name": name}))
    (d / "README.md").write_text(f"trained at some time {name}")
    return d


def batch_demo(folder: Path) -> Path:
    """What ``rlstream demo``'s batch path writes (sample logs -> ingest -> grade -> curate),
    called directly so these tests do not depend on the demo's other stages; returns out/."""
    from rlstream.curation import CurateOptions
    from rlstream.formats import FieldMapping
    from rlstream.grading import SpecResolver
    from rlstream.ingest import IngestOptions
    from rlstream.pipeline.batch import run_batch
    from rlstream.sampledata import write_sample_logs

    write_sample_logs(folder, seed=7)
    logs = sorted((folder / "logs").iterdir())
    batches = [([p for p in logs if p.name != "custom.jsonl"], IngestOptions())]
    custom = [p for p in logs if p.name == "custom.jsonl"]
    if custom:
        batches.append(
            (custom, IngestOptions(mapping=FieldMapping.from_yaml(folder / "custom_mapping.yaml")))
        )
    specs = SpecResolver.from_options(None, folder / "rewards.yaml")
    run_batch(batches, specs, folder / "out", CurateOptions())
    return folder / "out"
