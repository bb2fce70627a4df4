"""On-policy training: a method restricted to the rows the policy being trained from
produced (the rows' ``policy``); none of them refuses the run before it starts."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from rlstream.curation import CurateOptions, curate, write_dataset
from rlstream.errors import ConfigError
from rlstream.rewards import RewardResult
from rlstream.rollout import ScoredRollout
from rlstream.services.cli.main import app
from rlstream.training import TrainConfig
from rlstream.training.data import method_rows, resolve_config, train_rows
from rlstream.transcript import Message, Transcript

pytestmark = pytest.mark.unit


def _rollout(task: str, i: int, passed: bool, model: str | None) -> ScoredRollout:
    answer = "approved, refund issued" if passed else f"let me check ({i})"
    t = Transcript(
        conversation_id=f"{task}-{i}",
        messages=(
            Message(role="user", content=f"Refund for order {task}? (try {i})"),
            Message(role="assistant", content=f"{answer} [{task}/{i}]"),
        ),
        task_key=task,
        model=model,
    )
    score = 1.0 if passed else 0.0
    return ScoredRollout(
        rollout_id=ScoredRollout.make_id(t.conversation_id, "outcome"),
        transcript=t,
        results=(
            RewardResult(reward="outcome", version="1", score=score, passed=passed, threshold=0.5),
        ),
        score=score,
        passed=passed,
        reward_spec="outcome",
    )


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """Groups served by the champion (2), by an older model (1), and unlabelled logs (1)."""
    rollouts = []
    for task, model in (("a", "champ"), ("b", "champ"), ("c", "old"), ("d", None)):
        rollouts += [_rollout(task, i, i < 2, model) for i in range(4)]
    out = tmp_path / "ds"
    write_dataset(curate(rollouts, CurateOptions(heldout_share=0.0)), out)
    return out


def test_grpo_trains_only_on_the_champions_rows(dataset: Path) -> None:
    manifest, cfg = resolve_config(dataset, TrainConfig(method="grpo", on_policy="champ"))
    assert method_rows(manifest, cfg) == 2
    rows = train_rows(dataset, cfg)
    assert sorted(r["task_key"] for r in rows) == ["a", "b"]
    assert {r["policy"] for r in rows} == {"champ"}
    # unrestricted: every row
    _, every = resolve_config(dataset, TrainConfig(method="grpo"))
    assert len(train_rows(dataset, every)) == 4


def test_the_restriction_applies_to_the_listed_methods_only(dataset: Path) -> None:
    _, sft = resolve_config(dataset, TrainConfig(method="sft", on_policy="champ"))
    every = train_rows(dataset, sft)  # the RL methods only by default: sft keeps every row
    assert len(every) == 4 and {r["policy"] for r in every} == {"champ", "old", None}
    _, only = resolve_config(
        dataset, TrainConfig(method="sft", on_policy="champ", on_policy_methods=("sft",))
    )
    assert [r["policy"] for r in train_rows(dataset, only)] == ["champ", "champ"]


def test_no_on_policy_rows_refuses_before_the_run_saying_why(dataset: Path) -> None:
    with pytest.raises(ConfigError) as err:
        resolve_config(dataset, TrainConfig(method="grpo", on_policy="never-served"))
    msg = str(err.value)
    assert "none of the 4 grpo.jsonl rows were produced by never-served" in msg
    assert "(none): 1, champ: 2, old: 1" in msg


def test_datasets_curated_before_the_manifest_counted_policies(dataset: Path) -> None:
    """An older manifest has no ``policy_rows``: the rows themselves are counted."""
    path = dataset / "manifest.json"
    m = orjson.loads(path.read_bytes())
    del m["policy_rows"]
    path.write_bytes(orjson.dumps(m))
    manifest, cfg = resolve_config(dataset, TrainConfig(method="grpo", on_policy="old"))
    assert not manifest.policy_rows and len(train_rows(dataset, cfg)) == 1
    with pytest.raises(ConfigError, match="produced by gone"):
        resolve_config(dataset, TrainConfig(method="grpo", on_policy="gone"))


def test_rlstream_train_on_policy_refusal_is_one_line(dataset: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app,
        [
            "train", "--dataset", str(dataset), "--method", "grpo", "--dry-run",
            "--output", str(tmp_path / "run"), "--on-policy", "never-served",
        ],
    )  # fmt: skip
    assert res.exit_code != 0
    assert "none of the 4 grpo.jsonl rows were produced by never-served" in res.output
    assert "Traceback" not in res.output


def test_openrlhf_selects_on_policy_prompts_and_refuses_what_it_cannot(
    dataset: Path, tmp_path: Path
) -> None:
    from rlstream.training.data import read_rows
    from rlstream.training.openrlhf.prepare import on_policy_rows, prepare

    rows = on_policy_rows(read_rows(dataset, "grpo"), TrainConfig(on_policy="champ"), "gspo")
    assert sorted(r["task_key"] for r in rows) == ["a", "b"]
    with pytest.raises(ConfigError, match="produced by never-served"):
        prepare(dataset, "m", "grpo", TrainConfig(on_policy="never-served"), tmp_path / "o")
    sft_only = TrainConfig(on_policy="champ", on_policy_methods=("sft",))
    with pytest.raises(ConfigError, match=r"openrlhf trains sft on sft\.jsonl as it is"):
        prepare(dataset, "m", "sft", sft_only, tmp_path / "o")
