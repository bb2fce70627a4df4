"""``rlstream chat``: the base model plus an adapter on CPU, as a piped REPL."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlstream.services.cli.main import app

pytestmark = [pytest.mark.train, pytest.mark.filterwarnings("ignore::FutureWarning")]


@pytest.fixture(scope="module")
def adapter_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run output folder whose adapter/ is a LoRA with non-zero weights (so it changes
    what the model says: an untrained LoRA would be the identity)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from rlstream.training.basemodel import ensure_base_model, load_causal_lm

    torch.manual_seed(0)
    lm, _ = load_causal_lm(ensure_base_model())
    peft = get_peft_model(
        lm,
        LoraConfig(
            r=4, lora_alpha=64, target_modules=["q_proj", "v_proj"], init_lora_weights=False
        ),
    )
    run = tmp_path_factory.mktemp("run")
    peft.save_pretrained(str(run / "adapter"))
    return run


def _chat(*args: str, text: str) -> str:
    res = CliRunner().invoke(app, ["chat", *args, "--max-new-tokens", "12"], input=text)
    assert res.exit_code == 0, res.output
    return res.output


def test_chat_answers_each_line_with_the_adapter_applied(adapter_run: Path) -> None:
    from rlstream.training.basemodel import ensure_base_model

    prompt = "Where is my order A-48213?\n"
    tuned = _chat(str(adapter_run), text=prompt + "/reset\nhello\n/exit\nnever read\n")
    replies = [line for line in tuned.splitlines() if line.startswith("assistant>")]
    assert len(replies) == 2 and all(len(r) > len("assistant> ") for r in replies)
    base = _chat(str(ensure_base_model()), text=prompt)
    base_reply = [line for line in base.splitlines() if line.startswith("assistant>")]
    assert base_reply and base_reply[0] != replies[0]  # the adapter changed the answer


def test_chat_refuses_a_folder_without_a_model(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["chat", str(tmp_path)], input="hi\n")
    assert res.exit_code == 2 and "holds no adapter" in " ".join(res.output.split())
