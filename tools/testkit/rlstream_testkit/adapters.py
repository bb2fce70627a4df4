"""LoRA adapters on the bundled small model for hot-swap tests: random ones (different
seeds answer differently) and a corrupt one (a real config, garbage weights)."""

from __future__ import annotations

from pathlib import Path


def make_adapter(folder: Path, seed: int) -> Path:
    """A random LoRA adapter on the small model (different seeds answer differently)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from rlstream.training.basemodel import ensure_base_model, load_causal_lm

    torch.manual_seed(seed)
    lm, _ = load_causal_lm(ensure_base_model())
    cfg = LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    get_peft_model(lm, cfg).save_pretrained(str(folder))
    return folder


def corrupt_adapter(folder: Path, like: Path) -> Path:
    """A folder that looks like an adapter (a real config) with garbage weights."""
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_bytes((like / "adapter_config.json").read_bytes())
    (folder / "adapter_model.safetensors").write_bytes(b"\x00not safetensors" * 64)
    return folder
