"""One task-key definition for grading and profile; profiles per policy; pass@k group counts."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from rlstream.metrics import RolloutRow, profile_rows, render_profile
from rlstream.rewards import RewardResult
from rlstream.rollout import ScoredRollout
from rlstream.services.cli.main import app
from rlstream.transcript import Message, Transcript

pytestmark = pytest.mark.unit


def _t(i: int, task: str, model: str | None = None, task_key: str | None = None) -> Transcript:
    return Transcript(
        conversation_id=f"{task}-{i}-{model}",
        task_key=task_key,
        model=model,
        metadata={"task_id": task},
        messages=(
            Message(role="user", content=f"Task {task}: 9 x 2? (try {i})"),
            Message(role="assistant", content=f"The answer is {18 if i % 2 else 17}."),
        ),
        label="#### 18",
    )


def _scored(t: Transcript, passed: bool) -> ScoredRollout:
    s = 1.0 if passed else 0.0
    res = RewardResult(reward="outcome", version="1", score=s, passed=passed, threshold=0.5)
    return ScoredRollout(
        rollout_id=ScoredRollout.make_id(t.conversation_id, "x"),
        transcript=t,
        results=(res,),
        score=s,
        passed=passed,
        reward_spec="x",
    )


def test_grading_and_profile_share_one_task_key(tmp_path: Path) -> None:
    """Transcripts without a resolved task key but with metadata.task_id: grading grouped
    them by task, the profile used to see one singleton per conversation ('insufficient')."""
    ts = [_t(i, task) for task in ("a", "b", "c") for i in range(4)]
    src, out = tmp_path / "t.jsonl", tmp_path / "s.jsonl"
    src.write_bytes(b"".join(t.dump_json() + b"\n" for t in ts))
    res = CliRunner().invoke(
        app, ["grade", "--in", str(src), "--out", str(out), "--reward", "gsm8k"]
    )
    assert res.exit_code == 0, res.output
    rows = [ScoredRollout.model_validate_json(x) for x in out.read_bytes().splitlines()]
    assert {r.task_key for r in rows} == {"task_id:a", "task_id:b", "task_id:c"}
    p = profile_rows(RolloutRow.from_scored(r) for r in rows)
    assert (p.groups, p.singletons, p.mixed_groups) == (3, 0, 3)
    assert p.verdict != "insufficient"


def test_policies_are_profiled_apart_and_a_mixed_task_is_reported() -> None:
    rows = []
    for task in ("a", "b"):
        rows += [_scored(_t(i, task, "model-x", f"task_id:{task}"), i < 3) for i in range(4)]
        rows += [_scored(_t(i, task, "model-y", f"task_id:{task}"), i < 1) for i in range(4)]
    p = profile_rows(RolloutRow.from_scored(r) for r in rows)
    assert (p.groups, p.policies, p.mixed_policy_tasks) == (4, 2, 2)  # was 2 pooled groups
    text = _render(p)
    assert "several policies" in text


def test_pass_at_k_reports_its_group_count_per_point() -> None:
    rows = [_scored(_t(i, "big", task_key="task_id:big"), i % 3 == 0) for i in range(9)]
    rows += [
        _scored(_t(i, f"s{j}", task_key=f"task_id:s{j}"), i == 0)
        for j in range(5)
        for i in range(2)
    ]
    p = profile_rows(RolloutRow.from_scored(r) for r in rows)
    assert p.pass_at_k_groups["1"] == 6 and p.pass_at_k_groups["2"] == 6
    assert p.pass_at_k_groups["9"] == 1  # the tail of the curve rests on one group
    assert set(p.pass_at_k_groups) == set(p.pass_at_k)


def _render(p: object) -> str:
    from rich.console import Console

    c = Console(width=160, record=True)
    c.print(render_profile(p))  # type: ignore[arg-type]
    return c.export_text()


def test_profile_json_has_group_counts(tmp_path: Path) -> None:
    rows = [_scored(_t(i, "a", task_key="task_id:a"), i < 2) for i in range(4)]
    p = profile_rows(RolloutRow.from_scored(r) for r in rows)
    data = orjson.loads(orjson.dumps(p.to_json_dict()))
    assert data["pass_at_k_groups"] == {"1": 1, "2": 1, "3": 1, "4": 1}


def test_profile_endorses_like_curation_and_next_steps_reconciles(tmp_path: Path) -> None:
    """The demo said 'ALARM: non-endorsed feature numbers' in the profile while the dataset
    manifest listed numbers as endorsed (gsm8k), and next_steps.md gave other counts than
    the profile without saying why."""
    import re

    from rlstream.curation import CurateOptions, curate
    from rlstream.curation.next_steps import render_next_steps
    from rlstream.grading import RewardSpec, grade_many
    from rlstream.pipeline.batch import profile_file
    from rlstream.sampledata import generate_transcripts

    ts, _ = generate_transcripts(3, 12, 6, "math")
    scored = [r for r in grade_many(ts, RewardSpec.parse("gsm8k")) if isinstance(r, ScoredRollout)]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(r.model_dump_json().encode() + b"\n" for r in scored))
    p = profile_file(path)
    assert p.hack_scan is not None
    flags = {f.name: f.endorsed for f in p.hack_scan.features}
    assert flags["numbers"] is True  # was False: `rlstream profile` endorsed nothing
    assert "numbers" not in p.hack_scan.alarms
    result = curate(scored, CurateOptions(heldout_share=0.2))
    assert "numbers" in result.endorsed
    text = render_next_steps(result, {"grpo.jsonl": 0, "dpo.jsonl": 0, "sft.jsonl": 0})
    m = re.search(r"Input: (\d+) graded rollouts\. Profiled after holding out (\d+) rollouts "
                  r"\(evaluation tasks\) and dropping (\d+) .*?: (\d+)\s+rollouts", text, re.S)  # fmt: skip
    assert m, text
    total, held, dropped, profiled = (int(x) for x in m.groups())
    assert total == len(scored) and total - held - dropped == profiled
