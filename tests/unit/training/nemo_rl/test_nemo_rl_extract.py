"""tools/nemo_rl/extract_config_keys.py on a small stand-in checkout: dotted leaf keys from
every example config (recipes included), ``{}`` sections as free-form, the base configs'
values kept (interpolations as text), ``defaults:`` not a key; and the committed manifest
matches what the extractor writes for its own sources (same keys for the same files)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.unit

TOOL = Path(__file__).resolve().parents[4] / "tools" / "nemo_rl" / "extract_config_keys.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("extract_config_keys", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_extracts_dotted_keys(tmp_path: Path) -> None:
    configs = tmp_path / "examples" / "configs"
    (configs / "recipes").mkdir(parents=True)
    (configs / "grpo_math_1B.yaml").write_text(
        "grpo:\n  num_prompts_per_step: 32\npolicy:\n  max_total_sequence_length: 512\n"
        "  generation:\n    max_new_tokens: ${policy.max_total_sequence_length}\n"
        "    vllm_kwargs: {}\n  scheduler:\n  - name: a\ndata:\n  validation: null\n"
    )
    (configs / "ppo_math_1B.yaml").write_text("ppo:\n  ppo_epochs: 4\n")
    (configs / "recipes" / "r.yaml").write_text(
        "defaults: ../grpo_math_1B.yaml\ndata:\n  train:\n    data_path: /x.jsonl\n"
    )
    out = tmp_path / "keys.json"
    assert (
        _tool().main([str(tmp_path), "--tag", "v9", "--out", str(out), "--commit", "c" * 40]) == 0
    )
    m = json.loads(out.read_text())
    assert m["nemo_rl_tag"] == "v9" and m["commit"] == "c" * 40
    assert m["keys"] == [
        "data.train.data_path",
        "data.validation",
        "grpo.num_prompts_per_step",
        "policy.generation.max_new_tokens",
        "policy.generation.vllm_kwargs",
        "policy.max_total_sequence_length",
        "policy.scheduler",
        "ppo.ppo_epochs",
    ]
    assert m["open"] == ["policy.generation.vllm_kwargs"]
    assert m["bases"]["grpo"]["policy.generation.max_new_tokens"] == (
        "${policy.max_total_sequence_length}"
    )
    assert set(m["sources"]) == {"grpo_math_1B.yaml", "ppo_math_1B.yaml", "recipes/r.yaml"}


def test_committed_manifest_has_the_extractors_shape() -> None:
    from rlstream.training.nemo_rl.pin import manifest

    m = manifest()
    assert set(m) == {"nemo_rl_tag", "commit", "config_dir", "sources", "keys", "open", "bases"}
    assert m["keys"] == sorted(m["keys"]) and len(m["keys"]) > 500
    for method in ("grpo", "ppo"):
        assert set(m["bases"][method]) <= set(m["keys"])
