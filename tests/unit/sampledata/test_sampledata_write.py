from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import orjson
import pytest

from rlstream.errors import InputError
from rlstream.formats import FieldMapping, parse_record
from rlstream.grading import GradeFailure, RewardSpec, grade_many
from rlstream.rewards.config import load_reward_config
from rlstream.sampledata import Truth, write_sample_logs

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[3]


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_same_seed_writes_byte_identical_files(tmp_path: Path) -> None:
    m1 = write_sample_logs(tmp_path / "a", seed=9)
    write_sample_logs(tmp_path / "b", seed=9)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    write_sample_logs(tmp_path / "c", seed=10)
    assert (
        _files(tmp_path / "a")["logs/openai.jsonl"] != _files(tmp_path / "c")["logs/openai.jsonl"]
    )
    formats = {f.format for f in m1.files}
    assert {"openai", "anthropic", "sharegpt", "langchain", "otel", "custom"} <= formats
    assert any(f.compressed for f in m1.files)


def test_shipped_policy_matches_the_example() -> None:
    packaged = ROOT / "shared" / "rlstream" / "sampledata" / "refund_policy.yaml"
    assert (
        packaged.read_text() == (ROOT / "examples" / "policies" / "refund_policy.yaml").read_text()
    )


def test_written_logs_parse_back_and_grade_as_the_truth_says(tmp_path: Path) -> None:
    d = tmp_path / "s"
    manifest = write_sample_logs(d, seed=7)
    truth = Truth.load(d / "truth.json")
    mapping = FieldMapping.from_yaml(d / "custom_mapping.yaml")
    rejected: set[tuple[str, int]] = set()
    parsed = []
    for f in manifest.files:
        raw = (d / f.path).read_bytes()
        raw = gzip.decompress(raw) if f.compressed else raw
        if f.path.endswith(".json"):
            rows = [(i, json.dumps(r).encode()) for i, r in enumerate(json.loads(raw), start=1)]
        else:
            rows = list(enumerate(raw.splitlines(), start=1))
        for i, line in rows:
            try:
                rec = orjson.loads(line)
                parsed.append(parse_record(rec, mapping=mapping if f.format == "custom" else None))
            except (orjson.JSONDecodeError, InputError):
                rejected.add((f.path, i))
    assert rejected == {(m.file, m.line) for m in truth.malformed}
    ids = [t.conversation_id for t in parsed]
    assert sorted({i for i in ids if ids.count(i) > 1}) == sorted(set(truth.redelivered))
    assert set(ids) == set(truth.conversations)

    config = load_reward_config(d / "rewards.yaml")
    unique = {t.conversation_id: t for t in parsed}
    by_agent = defaultdict(list)
    for t in unique.values():
        by_agent[t.agent or str(t.metadata.get("agent"))].append(t)
    agree = total = 0
    for agent, group in by_agent.items():
        for o in grade_many(group, RewardSpec.for_agent(config, agent)):
            if isinstance(o, GradeFailure):
                continue
            total += 1
            agree += o.passed == truth.conversations[o.conversation_id].expected_pass
    assert total > 250 and agree / total >= 0.99
