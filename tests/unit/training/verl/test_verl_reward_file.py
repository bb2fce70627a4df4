"""The generated verl reward file: loaded by verl's own loader from the wheel, called the
way verl 0.9.1's naive reward manager calls it, total on hostile input, grading exactly
like the grader, and sha256-pinned."""

from __future__ import annotations

import ast
import sys
import types
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlstream.grading import grade_one
from rlstream.training.config import TrainConfig
from rlstream.training.openrlhf.reward_file import RewardFileError
from rlstream.training.openrlhf.reward_runtime import spec_from_id
from rlstream.training.reward import GrpoReward, sample_transcript
from rlstream.training.verl import reward_file
from rlstream.training.verl.prepare import TRAIN_FILE, WORK_DIR, prepare

pytestmark = pytest.mark.unit
Score = Callable[..., dict[str, Any]]
KEYS = {"score", "rlstream_reward_error", "rlstream_reward_pass"}


def _verl_loader(wheel: Path) -> types.ModuleType:
    """verl/utils/import_utils.py from the wheel (standard library only)."""
    module = types.ModuleType("verl_import_utils")
    with zipfile.ZipFile(wheel) as zf:
        source = zf.read("verl/utils/import_utils.py").decode()
    exec(compile(source, "verl/utils/import_utils.py", "exec"), module.__dict__)
    return module


@pytest.fixture(scope="module")
def planned(
    verl_maths_dataset: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[dict[str, Any]], str]:
    out = tmp_path_factory.mktemp("run")
    config = TrainConfig(method="grpo", learning_rate=5e-5, beta=0.0, max_steps=2)
    plan = prepare(verl_maths_dataset, "/m", "grpo", config, out)
    for path, data in plan.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    rows = [orjson.loads(x) for x in (out / WORK_DIR / TRAIN_FILE).read_bytes().splitlines()]
    return out / WORK_DIR / reward_file.FILE_NAME, rows, plan.sha256[reward_file.FILE_NAME]


@pytest.fixture(scope="module")
def compute_score(planned: tuple[Path, list[dict[str, Any]], str], verl_wheel: Path) -> Score:
    """As verl's reward loop does: ``load_extern_object(path, name)``."""
    func: Score = _verl_loader(verl_wheel).load_extern_object(str(planned[0]), reward_file.FUNCTION)
    return func


def _call(score: Score, row: dict[str, Any], solution: Any) -> dict[str, Any]:
    """verl 0.9.1 NaiveRewardManager.run_single's call."""
    extra = {**row["extra_info"], "num_turns": None, "rollout_reward_scores": {}}
    return score(
        data_source=row["data_source"],
        solution_str=solution,
        ground_truth=row["reward_model"]["ground_truth"],
        extra_info=extra,
    )


def test_rows_carry_verls_columns_and_the_task_key(
    planned: tuple[Path, list[dict[str, Any]], str],
) -> None:
    rows = planned[1]
    assert rows and all(
        set(r) == {"data_source", "prompt", "ability", "reward_model", "extra_info"} for r in rows
    )
    first = rows[0]
    assert first["reward_model"]["style"] == "rule"
    assert first["extra_info"]["rlstream_task_key"] == "t0"
    assert [r["extra_info"]["index"] for r in rows] == list(range(len(rows)))
    assert first["prompt"][-1] == {"role": "user", "content": "What is 3 times 7?"}


def test_scores_equal_the_graders_on_the_same_transcripts(
    compute_score: Score, planned: tuple[Path, list[dict[str, Any]], str]
) -> None:
    row = planned[1][0]
    truth = orjson.loads(row["reward_model"]["ground_truth"])
    verifier, messages = truth["context"], truth["messages"]
    spec = spec_from_id(verifier["reward_spec"])
    gold = verifier["label"].split()[-1]
    for text, want in ((f"so the answer is {gold}.", 1.0), ("the answer is 1.", 0.0)):
        out = _call(compute_score, row, text)
        transcript, ctx = sample_transcript(messages, text, verifier, truth["tools"])
        graded = grade_one(transcript, spec, ctx)
        assert out == {
            "score": graded.score,
            "rlstream_reward_error": 0.0,
            "rlstream_reward_pass": 1.0 if graded.passed else 0.0,
        }
        assert graded.score == want


def test_the_builtin_grpo_reward_scores_the_same_samples_alike(
    compute_score: Score, planned: tuple[Path, list[dict[str, Any]], str]
) -> None:
    row = planned[1][0]
    truth = orjson.loads(row["reward_model"]["ground_truth"])
    gold = truth["context"]["label"].split()[-1]
    texts = [f"It is {gold}.", "It is 0.", f"{gold}", "no idea"]
    label = orjson.dumps(truth["context"]).decode()
    builtin = GrpoReward()([truth["messages"]] * 4, texts, [label] * 4)
    ours = [_call(compute_score, row, t)["score"] for t in texts]
    assert ours == builtin and sorted(set(ours)) == [0.0, 1.0]


def test_a_spec_the_run_was_not_planned_with_gets_the_penalty(
    compute_score: Score, planned: tuple[Path, list[dict[str, Any]], str]
) -> None:
    row = orjson.loads(orjson.dumps(planned[1][0]))
    truth = orjson.loads(row["reward_model"]["ground_truth"])
    truth["context"]["reward_spec"] = truth["context"]["reward_spec"].replace("*1>=", "*3>=")
    row["reward_model"]["ground_truth"] = orjson.dumps(truth).decode()
    out = _call(compute_score, row, "21")
    assert out == {"score": -1.0, "rlstream_reward_error": 1.0, "rlstream_reward_pass": 0.0}


def test_an_openrlhf_label_is_not_graded_here(
    compute_score: Score, planned: tuple[Path, list[dict[str, Any]], str]
) -> None:
    row = orjson.loads(orjson.dumps(planned[1][0]))
    gt = row["reward_model"]["ground_truth"].replace("rlstream.verl.v1", "rlstream.openrlhf.v1")
    row["reward_model"]["ground_truth"] = gt
    assert _call(compute_score, row, "21")["rlstream_reward_error"] == 1.0


hostile = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=200),
    st.binary(max_size=50),
    st.just("x" * 2_000_000),
    st.just('{"format": "rlstream.verl.v1", "messages": 3, "context": []}'),
    st.just('{"format": "rlstream.verl.v1", "messages": [{"role": "wizard"}], "context": {}}'),
    st.just('{"format": "rlstream.verl.v1", "messages": [], "tools": [], "context": {}}'),
    st.just("{not json"),
    st.lists(st.text(max_size=20), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(source=hostile, solution=hostile, truth=hostile, extra=hostile, more=hostile)
def test_never_raises_on_hostile_input(
    compute_score: Score, source: Any, solution: Any, truth: Any, extra: Any, more: Any
) -> None:
    out = compute_score(
        data_source=source, solution_str=solution, ground_truth=truth, extra_info=extra, x=more
    )
    assert set(out) == KEYS
    assert out["score"] == reward_file.PENALTY and out["rlstream_reward_error"] == 1.0


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(solution=st.text(max_size=300))
def test_any_text_next_to_a_good_ground_truth_is_graded_not_penalised(
    compute_score: Score, planned: tuple[Path, list[dict[str, Any]], str], solution: str
) -> None:
    out = _call(compute_score, planned[1][0], solution)
    assert set(out) == KEYS and out["rlstream_reward_error"] == 0.0
    assert 0.0 <= out["score"] <= 1.0


def test_positional_and_missing_arguments_never_raise(compute_score: Score) -> None:
    assert compute_score()["rlstream_reward_error"] == 1.0
    assert compute_score("src", "sol", "{}", {})["rlstream_reward_error"] == 1.0


def test_rlstream_missing_gives_penalties_not_exceptions(
    compute_score: Score,
    planned: tuple[Path, list[dict[str, Any]], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "rlstream.training.verl.reward_runtime", None)
    out = _call(compute_score, planned[1][0], "21")
    assert out == {"score": -1.0, "rlstream_reward_error": 1.0, "rlstream_reward_pass": 0.0}


def test_the_file_imports_only_the_standard_library_at_load_time(
    planned: tuple[Path, list[dict[str, Any]], str],
) -> None:
    tree = ast.parse(planned[0].read_text())
    assert [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)] == []


def test_hash_is_deterministic_recorded_and_checked(
    planned: tuple[Path, list[dict[str, Any]], str], tmp_path: Path
) -> None:
    path, rows, recorded = planned
    data = path.read_bytes()
    spec_id = rows[0]["extra_info"]["reward_spec"]
    assert reward_file.render([spec_id]) == data == reward_file.render([spec_id, spec_id])
    assert reward_file.sha256_of(data) == recorded
    reward_file.verify(path, recorded)
    copy = tmp_path / reward_file.FILE_NAME
    copy.write_bytes(data.replace(b"PENALTY = -1.0", b"PENALTY = 0.0"))
    with pytest.raises(RewardFileError, match="not the planned"):
        reward_file.verify(copy, recorded)


def test_the_reward_runtime_needs_only_rlstreams_base_dependencies() -> None:
    """The GPU image's verl venv has rlstream without the ``train`` extra: grading a sample
    must not import TRL, torch, transformers or verl's own config stack."""
    import subprocess

    heavy = ("trl", "torch", "transformers", "peft", "hydra", "omegaconf", "verl")
    probe = (
        "import sys, rlstream.training.verl.reward_runtime\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r})))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
