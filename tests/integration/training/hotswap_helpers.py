"""Builders for the hot-swap tests (a uniquely named module: test dirs have no __init__.py):
random LoRA adapters on the small model and a real ``rlstream serve`` process."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(base: Path, model_id: str, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """``rlstream serve BASE --model-id ID --no-log``, ready (or a failure with its output)."""
    port = _free_port()
    cmd = [sys.executable, "-m", "rlstream.services.cli.main", "serve", str(base)]
    cmd += ["--model-id", model_id, "--port", str(port), "--no-log", *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        try:
            if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "server not ready in 180 s"
        time.sleep(0.5)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
