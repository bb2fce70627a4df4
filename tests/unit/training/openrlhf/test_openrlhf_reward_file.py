"""The generated reward_func.py: loaded the way OpenRLHF loads it, total on hostile input,
grading like the grader, and sha256-pinned."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from _helpers_openrlhf import Cfg, write_maths_dataset
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlstream.grading import grade_one
from rlstream.training.openrlhf import reward_file
from rlstream.training.openrlhf.prepare import prepare
from rlstream.training.openrlhf.reward_runtime import spec_from_id, transcript_of

pytestmark = pytest.mark.unit
PROMPT = "<|im_start|>system\nAnswer with the number.<|im_end|>\n<|im_start|>assistant\n"
RewardFunc = Callable[..., dict[str, Any]]


def _load(path: Path) -> RewardFunc:
    """As openrlhf/utils/agent.py 0.11.2 does: spec_from_file_location + exec_module."""
    spec = importlib.util.spec_from_file_location("reward_func", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    func: RewardFunc = module.reward_func
    return func


@pytest.fixture(scope="module")
def planned(
    maths_dataset: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[str], str]:
    out = tmp_path_factory.mktemp("run")
    plan = prepare(maths_dataset, "/m", "grpo", Cfg(), out)
    for path, data in plan.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    labels = [
        orjson.loads(line)["label"]
        for line in (out / "openrlhf" / "prompts.jsonl").read_bytes().splitlines()
    ]
    return out / "openrlhf" / reward_file.FILE_NAME, labels, plan.sha256[reward_file.FILE_NAME]


@pytest.fixture(scope="module")
def reward_func(planned: tuple[Path, list[str], str]) -> RewardFunc:
    return _load(planned[0])


def test_scores_equal_the_graders_on_the_same_transcripts(
    reward_func: RewardFunc, planned: tuple[Path, list[str], str]
) -> None:
    _, labels, _ = planned
    context = orjson.loads(labels[0])["context"]
    gold = context["label"].split()[-1]
    spec = spec_from_id(context["reward_spec"])
    for text, want in ((f"so the answer is {gold}.", 1.0), ("the answer is 1.", 0.0)):
        query = PROMPT + text + "<|im_end|>"
        out = reward_func([query], [PROMPT], [labels[0]])
        transcript, ctx, _ = transcript_of(query, PROMPT, labels[0])
        graded = grade_one(transcript, spec, ctx)
        assert out["rewards"] == out["scores"] == graded.score == want
        assert out["extra_logs"] == {"rlstream_reward_errors": 0.0, "rlstream_reward_passes": want}
    batch = reward_func([PROMPT + f"{gold}", PROMPT + "no"], [PROMPT, PROMPT], [labels[0]] * 2)
    assert batch["rewards"] == [1.0, 0.0] and batch["extra_logs"]["rlstream_reward_errors"] == 0.0


def test_the_builtin_grpo_reward_scores_the_same_samples_alike(
    reward_func: RewardFunc, planned: tuple[Path, list[str], str]
) -> None:
    """Both backends grade a sample with the same code: the builtin's TRL reward callable
    and OpenRLHF's reward file agree on every score."""
    from rlstream.training.reward import GrpoReward

    label = planned[1][0]
    verifier, messages = orjson.loads(label)["context"], orjson.loads(label)["messages"]
    gold = verifier["label"].split()[-1]
    texts = [f"It is {gold}.", "It is 0.", f"{gold}", "no idea"]
    builtin = GrpoReward()([messages] * 4, texts, [orjson.dumps(verifier).decode()] * 4)
    ours = reward_func([PROMPT + t for t in texts], [PROMPT] * 4, [label] * 4)["rewards"]
    assert ours == builtin and sorted(set(ours)) == [0.0, 1.0]


def test_a_spec_the_run_was_not_planned_with_gets_the_penalty(
    reward_func: RewardFunc, planned: tuple[Path, list[str], str]
) -> None:
    label = orjson.loads(planned[1][0])
    label["context"]["reward_spec"] = spec_from_id("gsm8k@1.0.0*1>=0.5#6ab8b5a6").spec_id.replace(
        "*1>=", "*3>="
    )
    out = reward_func([PROMPT + "21"], [PROMPT], [orjson.dumps(label).decode()])
    assert out["rewards"] == -1.0 and out["extra_logs"]["rlstream_reward_errors"] == 1.0


def test_each_row_is_graded_with_its_own_spec(tmp_path: Path) -> None:
    ds = write_maths_dataset(tmp_path / "ds", second_spec="gsm8k:2")
    plan = prepare(ds, "/m", "grpo", Cfg(batch_size=2), tmp_path / "run")
    specs = plan.summary["reward_specs"]
    assert len(specs) == 2 and {s.split("*")[1][0] for s in specs} == {"1", "2"}
    for path, data in plan.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    func = _load(tmp_path / "run" / "openrlhf" / reward_file.FILE_NAME)
    rows = [
        orjson.loads(x) for x in (tmp_path / "run/openrlhf/prompts.jsonl").read_bytes().splitlines()
    ]
    seen = set()
    for row in rows:
        verifier = orjson.loads(row["label"])["context"]
        seen.add(verifier["reward_spec"])
        gold = verifier["label"].split()[-1]
        assert func([PROMPT + gold], [PROMPT], [row["label"]])["rewards"] == 1.0
    assert seen == set(specs)


hostile = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=200),
    st.binary(max_size=50),
    st.just("x" * 2_000_000),
    st.just('{"format": "rlstream.openrlhf.v1", "messages": 3, "context": []}'),
    st.just('{"format": "rlstream.openrlhf.v1", "messages": [{"role": "wizard"}], "context": {}}'),
    st.just("{not json"),
    st.lists(st.text(max_size=20), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    queries=st.one_of(hostile, st.lists(hostile, max_size=4)),
    prompts=st.one_of(hostile, st.lists(hostile, max_size=4)),
    labels=st.one_of(hostile, st.lists(hostile, max_size=4)),
)
def test_never_raises_on_hostile_input(
    reward_func: RewardFunc, queries: Any, prompts: Any, labels: Any
) -> None:
    out = reward_func(queries, prompts, labels)
    n = len(queries) if isinstance(queries, list) else 1
    errors = out["extra_logs"]["rlstream_reward_errors"]
    if n == 1:
        assert isinstance(out["rewards"], float) and isinstance(out["scores"], float)
        rewards = [out["rewards"]]
    else:
        assert len(out["rewards"]) == len(out["scores"]) == n
        rewards = out["rewards"]
    assert errors == sum(r == reward_file.PENALTY for r in rewards)
    assert all(r == reward_file.PENALTY or 0.0 <= r <= 1.0 for r in rewards)


def test_hostile_values_next_to_a_good_label_are_penalised(
    reward_func: RewardFunc, planned: tuple[Path, list[str], str]
) -> None:
    good = planned[1][0]
    bad_label = good.replace("rlstream.openrlhf.v1", "other")
    out = reward_func(
        [
            PROMPT + "1",
            "does not start with the prompt",
            None,
            PROMPT + "1",
            PROMPT + "x" * 2_000_000,
        ],
        [PROMPT, PROMPT, PROMPT, PROMPT, PROMPT],
        [good, good, good, bad_label, good],
    )
    assert out["rewards"] == [0.0, -1.0, -1.0, -1.0, -1.0]
    assert out["extra_logs"]["rlstream_reward_errors"] == 4.0


def test_rlstream_missing_gives_penalties_not_exceptions(
    reward_func: RewardFunc, planned: tuple[Path, list[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "rlstream.training.openrlhf.reward_runtime", None)
    out = reward_func([PROMPT + "21"], [PROMPT], [planned[1][0]])
    assert out == {
        "rewards": -1.0,
        "scores": 0.0,
        "extra_logs": {"rlstream_reward_errors": 1.0, "rlstream_reward_passes": 0.0},
    }


def test_the_file_imports_only_the_standard_library_at_load_time(
    planned: tuple[Path, list[str], str],
) -> None:
    import ast

    tree = ast.parse(planned[0].read_text())
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    assert top == []  # rlstream is imported lazily, inside the guard


def test_hash_is_deterministic_recorded_and_checked(
    planned: tuple[Path, list[str], str], tmp_path: Path
) -> None:
    path, _, recorded = planned
    data = path.read_bytes()
    spec_id = orjson.loads(planned[1][0])["context"]["reward_spec"]
    assert reward_file.render([spec_id]) == data == reward_file.render([spec_id, spec_id])
    assert reward_file.sha256_of(data) == recorded
    reward_file.verify(path, recorded)
    copy = tmp_path / reward_file.FILE_NAME
    copy.write_bytes(data.replace(b"PENALTY = -1.0", b"PENALTY = 0.0"))
    with pytest.raises(reward_file.RewardFileError, match="not the planned"):
        reward_file.verify(copy, recorded)
    with pytest.raises(reward_file.RewardFileError, match="cannot read"):
        reward_file.verify(tmp_path / "missing.py", recorded)
