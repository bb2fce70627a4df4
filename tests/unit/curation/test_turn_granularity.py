"""Multi-turn agent logs become turn-level files: auto picks the granularity, rows carry
lineage, the scored rollouts carry per-turn scores, and the trainer and evaluator read the
rows as turns (loss on the trained turn only; earlier calls visible in the prompt)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from tests.unit.curation.rollout_builders import agent_rollout, call
from tests.unit.curation.rollout_builders import rollout as single_call_rollout

from rlstream.curation import CurateOptions, curate, write_dataset
from rlstream.curation.turn_refs import with_turn_scores
from rlstream.evaluation.grading import as_transcript
from rlstream.evaluation.prompts import load_heldout
from rlstream.evaluation.sampler import uses_tools, with_system
from rlstream.training.builtin.rows import as_prompt_completion, one_turn_rows

pytestmark = pytest.mark.unit

GET, CANCEL, WRONG = call("get", id="u1"), call("cancel", rid="R1"), call("cancel", rid="R9")


def _groups(n_tasks: int = 12) -> list:
    out = []
    for k in range(n_tasks):
        task = f"task{k}"
        out += [
            agent_rollout(f"{task}-p1", True, [GET, CANCEL, "done"], task=task),
            agent_rollout(f"{task}-p2", True, ["hi", GET, CANCEL, "done"], task=task),
            agent_rollout(f"{task}-f1", False, [GET, WRONG, "done"], task=task),
            agent_rollout(f"{task}-f2", False, [CANCEL, "done"], task=task),
        ]
    return out


def test_multi_turn_logs_give_turn_files_with_lineage(tmp_path: Path) -> None:
    result = curate(_groups(), CurateOptions(heldout_share=0.25, near_dup_threshold=None))
    m = write_dataset(result, tmp_path)
    assert m.granularity == "turn"
    assert m.turn_profile is not None and m.turn_profile["divergences_located"] > 0
    dpo = [orjson.loads(x) for x in (tmp_path / "dpo.jsonl").read_bytes().splitlines()]
    assert len(dpo) == 2 * len(result.kept)  # f1 at its 2nd call, f2 at its 1st
    assert {r["turn"] for r in dpo} == {0, 1}
    sft = [orjson.loads(x) for x in (tmp_path / "sft.jsonl").read_bytes().splitlines()]
    assert one_turn_rows(sft)
    pc = as_prompt_completion(sft)
    assert all(len(r["completion"]) == 1 and r["completion"][0]["role"] == "assistant" for r in pc)
    lineage = {(e.file, e.row): e for e in m.lineage}
    assert lineage[("dpo.jsonl", 0)].rollout_ids == (
        dpo[0]["chosen_rollout_id"], dpo[0]["rejected_rollout_id"],
    )  # fmt: skip
    assert len([e for e in m.lineage if e.file == "sft.jsonl"]) == len(sft)
    assert m.heldout_task_keys  # held-out tasks give next-action prompts
    assert not {e.task_key for e in m.lineage} & set(m.heldout_task_keys)
    prompts = load_heldout(tmp_path / "heldout.jsonl")
    assert prompts and {p.reward_spec for p in prompts} == {"tool_calling"}
    second = next(p for p in prompts if any(m.get("tool_calls") for m in p.messages))
    assert uses_tools(second.messages)
    rendered = with_system(second.messages)
    assert any(m["tool_calls"] for m in rendered if m["role"] == "assistant")
    # only the new turn is graded: the prompt's earlier calls are not in the transcript
    t = as_transcript(second, '```json\n{"name": "cancel", "arguments": {"rid": "R1"}}\n```', "c")
    assert [m.tool_calls for m in t.messages] == [()] * len(t.messages)


def test_single_call_agents_stay_at_conversation_level(tmp_path: Path) -> None:
    rows = [single_call_rollout(f"t{k}", i, i % 2 == 0) for k in range(6) for i in range(4)]
    m = write_dataset(curate(rows, CurateOptions(near_dup_threshold=None)), tmp_path)
    assert m.granularity == "conversation" and m.turn_profile is None
    forced = curate(rows, CurateOptions(near_dup_threshold=None, granularity="turn"))
    assert write_dataset(forced, tmp_path / "t").granularity == "turn"


def test_scored_rollouts_carry_turn_scores_by_task() -> None:
    rows = with_turn_scores(_groups(2))
    f1 = next(r for r in rows if r.rollout_id == "task0-f1")
    assert [t.source for t in f1.turns] == ["reference_match", "divergence", "after_divergence"]
    assert all(t.source == "passing_rollout" for t in rows[0].turns)
    assert [r.rollout_id for r in rows] == [r.rollout_id for r in _groups(2)]
