"""The reward extension point: docs/rewards.md's example works, group-aware rewards are found
through the typed protocols, and every shipped reward builds its result with make_result."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rlstream.grading import RewardSpec, grade_many, grade_one
from rlstream.rewards import (
    GroupAwareReward,
    GroupScoringReward,
    Reward,
    RewardContext,
    RewardResult,
    group_scorer_factory,
    is_group_aware,
    make_result,
    registry,
)
from rlstream.rewards.registry import get_reward
from rlstream.rewards.tool_calling import ToolCallingReward
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Message, Transcript

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "rewards.md"
REWARDS = ROOT / "shared" / "rlstream" / "rewards"


def _doc_example() -> dict[str, Any]:
    text = DOC.read_text()
    section = text[text.index("### Adding a reward") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    namespace: dict[str, Any] = {"__name__": "doc_example"}
    exec(compile(code.group(1), str(DOC), "exec"), namespace)
    return namespace


def _t(cid: str, reply: str, key: str = "k") -> Transcript:
    msgs = (Message(role="user", content="q"), Message(role="assistant", content=reply))
    return Transcript(conversation_id=cid, messages=msgs, task_key=key, outcome={"resolved": True})


def test_the_documented_reward_registers_and_grades() -> None:
    cls = _doc_example()["ShortAnswer"]
    registry.register("short_answer", cls)
    try:
        reward = get_reward("short_answer", max_words=3)
        assert isinstance(reward, Reward) and not is_group_aware(reward)
        out = grade_one(_t("c1", "ok fine"), RewardSpec.from_names(["short_answer"]))
        assert out.passed and out.results[0].components == {"short": 1.0}
        long = grade_one(
            _t("c2", "a b c d e"),
            RewardSpec.from_names(["short_answer"], options={"short_answer": {"max_words": 3}}),
        )
        assert not long.passed and long.results[0].reasons == ("reply too long",)
    finally:
        registry.unregister("short_answer")


class _Peers:
    """Group-aware without a group scorer: reads context.group itself."""

    name: ClassVar[str] = "peers"
    version: ClassVar[str] = "1"
    endorsed_features: ClassVar[tuple[str, ...]] = ()
    uses_group: ClassVar[bool] = True

    def __init__(self, **_: Any) -> None:
        self.threshold = 0.0

    def __call__(self, t: Transcript, context: RewardContext) -> RewardResult:
        n = len(context.group)
        return make_result(
            reward=self.name,
            version=self.version,
            score=n / 10,
            threshold=self.threshold,
            components={},
            reasons=[p.conversation_id for p in context.group],
        )


class _NotGrouped(_Peers):
    uses_group: ClassVar[bool] = False


def test_group_awareness_comes_from_the_protocols() -> None:
    tool = ToolCallingReward()
    assert isinstance(tool, GroupScoringReward) and is_group_aware(tool)
    assert group_scorer_factory(tool) is not None
    peers = _Peers()
    assert isinstance(peers, GroupAwareReward) and is_group_aware(peers)
    assert group_scorer_factory(peers) is None
    assert isinstance(_NotGrouped(), GroupAwareReward) and not is_group_aware(_NotGrouped())
    for name in ("customer_support", "gsm8k", "outcome"):
        assert not is_group_aware(get_reward(name))


def test_a_group_aware_reward_gets_the_other_passing_peers() -> None:
    registry.register("peers", _Peers)
    try:
        spec = RewardSpec.from_names(["peers"])
        assert spec.uses_group
        ts = [_t("a1", "x", "a"), _t("b1", "x", "b"), _t("a2", "x", "a"), _t("a3", "x", "a")]
        out = [o for o in grade_many(ts, spec) if isinstance(o, ScoredRollout)]
    finally:
        registry.unregister("peers")
    assert [o.results[0].reasons for o in out] == [("a2", "a3"), (), ("a1", "a3"), ("a1", "a2")]


def _result_builds(tree: ast.AST) -> list[tuple[int, str]]:
    """Calls that make a RewardResult other than make_result: ``RewardResult(...)``,
    ``RewardResult.model_*(...)``, and any ``trusted``/``replaced``/``model_construct``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in {"RewardResult", "trusted", "replaced"}:
            found.append((node.lineno, f.id))
        elif isinstance(f, ast.Attribute) and (
            f.attr == "model_construct"
            or (isinstance(f.value, ast.Name) and f.value.id == "RewardResult")
        ):
            found.append((node.lineno, ast.unparse(f)))
    return found


def test_every_shipped_reward_builds_its_result_with_make_result() -> None:
    offenders = []
    for path in sorted(REWARDS.glob("*.py")):
        tree = ast.parse(path.read_text())
        # make_result itself (top level of base.py) is the one place allowed to build
        tree.body = [
            n for n in tree.body if not (isinstance(n, ast.FunctionDef) and n.name == "make_result")
        ]
        offenders += [f"{path.name}:{line} {call}(...)" for line, call in _result_builds(tree)]
    assert not offenders, offenders
    assert any("make_result(" in p.read_text() for p in REWARDS.glob("*.py") if p.name != "base.py")


def test_the_make_result_rule_catches_a_planted_build() -> None:
    planted = ast.parse(
        "def __call__(self, t, c):\n"
        "    return RewardResult(reward='x', version='1', score=1.0, passed=True, threshold=0.5)\n"
        "def other():\n"
        "    return trusted(RewardResult, {})\n"
    )
    assert [c for _, c in _result_builds(planted)] == ["RewardResult", "trusted"]


def test_make_result_clamps_a_plugin_rewards_out_of_range_values() -> None:
    result = make_result(
        reward="plugin",
        version="1",
        score=1.7,
        threshold=0.5,
        components={"over": 2.5, "under": -0.3, "ok": 0.25},
        turn_scores=(1.5, -2.0, 0.5),
    )
    assert result.score == 1.0 and result.passed
    assert result.components == {"over": 1.0, "under": 0.0, "ok": 0.25}
    assert result.turn_scores == (1.0, 0.0, 0.5)
    with pytest.raises(ValueError, match="NaN"):
        make_result(reward="plugin", version="1", score=float("nan"), threshold=0.5, components={})
