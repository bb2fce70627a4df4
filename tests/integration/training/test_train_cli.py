"""``rlstream train`` without training: plans, Job manifests and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from rlstream.services.cli.main import app

pytestmark = pytest.mark.train


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["train", *args])
    return result.exit_code, result.output


def test_dry_run_prints_the_trl_plan_and_writes_nothing(demo_dataset: Path, tmp_path: Path) -> None:
    code, out = _run("--dataset", str(demo_dataset), "--dry-run", "--output", str(tmp_path / "r"))
    assert code == 0, out
    # method auto -> the manifest's recommendation (grpo for the demo's mixed agents)
    assert "builtin grpo" in out and "trl.GRPOTrainer" in out
    assert "--num_generations=4" in out and "--bf16=false" in out
    assert not (tmp_path / "r").exists()
    code, out = _run("--dataset", str(demo_dataset), "--method", "sft", "--dry-run")
    assert code == 0 and "--assistant_only_loss=true" in out


def test_openrlhf_dry_run_is_the_other_backends_plan(demo_dataset: Path) -> None:
    args = ["--dataset", str(demo_dataset), "--backend", "openrlhf", "--dry-run"]
    code, out = _run(*args, "--method", "sft")
    assert code == 0, out
    assert "openrlhf sft" in out and "openrlhf.cli.train_sft" in out
    # GRPO: each row graded with its own spec (rows no fresh sample can be graded for are
    # skipped, with the reason), the command and the generated reward file
    code, out = _run(*args, "--method", "grpo")
    assert code == 0, out
    assert "group_norm" in out and "file openrlhf/reward_func.py" in out
    assert "gsm8k@" in out and "skipped_rows" in out
    # its own refusals (here: an abbreviated flag argparse would accept) are one line
    code, out = _run(*args, "--method", "grpo", "--backend-arg=--actor.adam.l=1e-5")
    assert code != 0 and "abbreviation of --actor.adam.lr" in out and "Traceback" not in out


def test_kubernetes_dry_run_prints_the_job(demo_dataset: Path) -> None:
    code, out = _run("--dataset", str(demo_dataset), "--launcher", "kubernetes", "--dry-run")
    assert code == 0, out
    job = yaml.safe_load(out[out.index("apiVersion") :])
    assert job["kind"] == "Job"
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--dataset" in args and "--config" in args
    sent = json.loads(args[args.index("--config") + 1])
    assert sent["max_steps"] == 20 and sent["method"] != "auto"  # the whole TrainConfig


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "/nonexistent"], "not a dataset folder"),
        (["--backend", "nope"], "unknown training backend"),
        (["--backend-arg=--no_such_field=1"], "has no no_such_field"),
        (["--backend-arg=oops"], "expected --name=value"),
        (["--launcher", "slurm"], "--launcher must be local or kubernetes"),
    ],
)
def test_bad_input_is_one_line_without_traceback(
    demo_dataset: Path, args: list[str], message: str
) -> None:
    base = [] if "--dataset" in args else ["--dataset", str(demo_dataset)]
    code, out = _run(*base, *args, "--dry-run")
    assert code == 2, out
    flat = " ".join(out.split())  # rich wraps at the terminal width
    assert message in flat and "Traceback" not in out
    assert out.count("error") == 1  # one message (rich may wrap it at the terminal width)


def test_next_steps_commands_are_real(demo_dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``rlstream train`` line next_steps.md prints parses and plans (run from the
    dataset folder, as the file says)."""
    lines = [
        line.split()
        for line in (demo_dataset / "next_steps.md").read_text().splitlines()
        if line.startswith("rlstream train ")
    ]
    # recommended + the other methods with rows, then the sequence-level variants (gspo on
    # the builtin backend, ppo on OpenRLHF: the builtin backend refuses ppo)
    methods = [argv[argv.index("--method") + 1] for argv in lines]
    assert methods[-2:] == ["gspo", "ppo"] and len(methods) >= 3, methods
    monkeypatch.chdir(demo_dataset)
    for argv in lines:
        code, out = _run(*argv[2:], "--dry-run")
        assert code == 0, (argv, out)
        method = argv[argv.index("--method") + 1]
        backend = argv[argv.index("--backend") + 1] if "--backend" in argv else "builtin"
        assert f"{backend} {method}" in out, out
