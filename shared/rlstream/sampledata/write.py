"""Write a sample production-log folder: one file per supported format, plus a gzip file, a
custom-shape file with its mapping YAML, a reward config, the refund policy and truth.json.

Layout (all paths in the manifest are relative to ``out_dir``)::

    logs/openai.jsonl  logs/anthropic.jsonl  logs/sharegpt.json  logs/langsmith.jsonl
    logs/otel.jsonl    logs/openai-archive.jsonl.gz              logs/custom.jsonl
    custom_mapping.yaml  rewards.yaml  refund_policy.yaml  truth.json  manifest.json

Malformed records (bad JSON, no messages, wrong types) and re-delivered duplicates are
planted at recorded places; the same seed always writes byte-identical files.
"""

from __future__ import annotations

import gzip
import hashlib
import io
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from rlstream.sampledata._build import sub_rng
from rlstream.sampledata.generate import generate_transcripts
from rlstream.sampledata.truth import MalformedTruth, SampleFile, SampleManifest, Truth
from rlstream.transcript import Transcript

TASKS_PER_DOMAIN = 16
ROLLOUTS_PER_TASK = 8

#: file name -> (format, compressed)
FILES: dict[str, tuple[str, bool]] = {
    "openai.jsonl": ("openai", False),
    "anthropic.jsonl": ("anthropic", False),
    "sharegpt.json": ("sharegpt", False),
    "langsmith.jsonl": ("langchain", False),
    "otel.jsonl": ("otel", False),
    "openai-archive.jsonl.gz": ("openai", True),
    "custom.jsonl": ("custom", False),
}
#: which files each domain's conversations may land in (custom shape carries no tool calls)
_ROUTES = {
    "support": (
        "openai.jsonl",
        "anthropic.jsonl",
        "langsmith.jsonl",
        "otel.jsonl",
        "openai-archive.jsonl.gz",
        "sharegpt.json",
    ),
    "math": ("sharegpt.json", "openai.jsonl", "custom.jsonl", "langsmith.jsonl"),
    "policy": ("anthropic.jsonl", "otel.jsonl", "openai.jsonl", "openai-archive.jsonl.gz"),
}
_MALFORMED: tuple[tuple[str, str, bytes], ...] = (
    (
        "openai.jsonl",
        "invalid_json",
        b'{"id": "broken-1", "messages": [{"role": "user", "content": "hel',
    ),
    ("openai.jsonl", "missing_messages", b'{"id": "no-messages-1", "metadata": {"task_id": "x"}}'),
    ("anthropic.jsonl", "wrong_types", b'{"id": "wrong-types-1", "messages": "hello there"}'),
    (
        "langsmith.jsonl",
        "wrong_types",
        b'{"id": "wrong-types-2", "messages": [{"role": 5, "content": 12}]}',
    ),
    ("otel.jsonl", "invalid_json", b'{"trace_id": "00ff", "attributes": {'),
    ("custom.jsonl", "missing_messages", b'{"session_id": "no-turns-1", "task_id": "x"}'),
)
CUSTOM_MAPPING = """\
# How custom.jsonl keeps its conversations (rlstream.formats.FieldMapping).
mapping:
  messages_field: turns
  id_field: session_id
  label_field: gold
  model_field: bot_model
  agent_field: agent
  outcome_field: result
  role_key: speaker
  content_key: text
  role_map: {instructions: system, customer: user, agent: assistant}
"""
REWARDS_YAML = """\
# Which rewards grade which agent (rlstream.rewards.config.load_reward_config).
agents:
  support-bot:
    - {name: customer_support, weight: 1.0}
    - {name: tool_calling, weight: 1.0}
    - {name: outcome, weight: 1.0}
  math-tutor:
    - {name: gsm8k, weight: 1.0}
  refunds-bot:
    - {name: nsr, weight: 1.0, options: {policy: refund_policy.yaml}}
"""


def policy_text() -> str:
    """The refund policy the nsr sample conversations follow (shipped with the package)."""
    return resources.files("rlstream.sampledata").joinpath("refund_policy.yaml").read_text()


def _custom(t: Transcript) -> dict[str, Any]:
    roles = {"system": "instructions", "user": "customer", "assistant": "agent"}
    out: dict[str, Any] = {
        "session_id": t.conversation_id,
        **{k: v for k, v in t.metadata.items()},
        "bot_model": t.model,
        "agent": t.agent,
        "turns": [{"speaker": roles[m.role], "text": m.content} for m in t.messages],
    }
    if t.outcome:
        out["result"] = dict(t.outcome)
    if t.label is not None:
        out["gold"] = t.label
    return out


def _record(t: Transcript, fmt: str) -> dict[str, Any]:
    if fmt == "custom":
        return _custom(t)
    from rlstream.formats import to_format

    return to_format(t, fmt)


def write_sample_logs(out_dir: Path, seed: int = 7, scale: int = 1) -> SampleManifest:
    """Generate all three domains and write them as realistic, slightly dirty log files."""
    out_dir = Path(out_dir)
    logs = out_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    n_tasks = TASKS_PER_DOMAIN * max(1, scale)
    transcripts: list[Transcript] = []
    truth: Truth | None = None
    for domain in ("support", "math", "policy"):
        ts, tr = generate_transcripts(seed, n_tasks, ROLLOUTS_PER_TASK, domain)
        transcripts.extend(ts)
        truth = tr if truth is None else truth.merge(tr)
    assert truth is not None

    rng = sub_rng(seed, "write")
    rows: dict[str, list[tuple[bytes, str | None]]] = {name: [] for name in FILES}
    redelivered: list[str] = []
    for t in transcripts:
        domain = truth.conversations[t.conversation_id].domain
        name = rng.choice(_ROUTES[domain])
        line = orjson.dumps(_record(t, FILES[name][0]))
        rows[name].append((line, t.conversation_id))
        if rng.random() < 0.01:  # at-least-once delivery: the same record again, later
            redelivered.append(t.conversation_id)
            rows[name].append((line, None))

    malformed: list[MalformedTruth] = []
    for name, kind, raw in _MALFORMED:
        pos = rng.randrange(len(rows[name]) + 1)
        rows[name].insert(pos, (raw, f"!{kind}"))

    files: list[SampleFile] = []
    locations: dict[str, str] = {}
    for name, (fmt, compressed) in FILES.items():
        rel = f"logs/{name}"
        for i, (_, tag) in enumerate(rows[name], start=1):
            if tag is None:
                continue
            if tag.startswith("!"):
                malformed.append(MalformedTruth(file=rel, line=i, kind=tag[1:]))
            else:
                locations[tag] = f"{rel}:{i}"
        if name.endswith(".json"):
            data = b"[\n" + b",\n".join(r for r, _ in rows[name]) + b"\n]\n"
        else:
            data = b"".join(r + b"\n" for r, _ in rows[name])
        if compressed:
            buf = io.BytesIO()
            with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
                gz.write(data)
            data = buf.getvalue()
        (out_dir / rel).write_bytes(data)
        files.append(
            SampleFile(
                path=rel,
                format=fmt,
                records=len(rows[name]),
                sha256=hashlib.sha256(data).hexdigest(),
                compressed=compressed,
                mapping="custom_mapping.yaml" if fmt == "custom" else None,
            )
        )

    (out_dir / "custom_mapping.yaml").write_text(CUSTOM_MAPPING)
    (out_dir / "rewards.yaml").write_text(REWARDS_YAML)
    (out_dir / "refund_policy.yaml").write_text(policy_text())
    truth = truth.model_copy(
        update={
            "malformed": tuple(malformed),
            "redelivered": tuple(redelivered),
            "locations": locations,
        }
    )
    truth.dump(out_dir / "truth.json")
    manifest = SampleManifest(
        seed=seed,
        scale=scale,
        files=tuple(files),
        truth="truth.json",
        conversations=len(transcripts),
        note="sharegpt.json is one JSON array: its 'line' numbers are 1-based element indexes",
    )
    (out_dir / "manifest.json").write_text(manifest.model_dump_json(indent=1) + "\n")
    return manifest
