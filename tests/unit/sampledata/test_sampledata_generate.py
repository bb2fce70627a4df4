from __future__ import annotations

from collections import defaultdict

import pytest

from rlstream.errors import ConfigError, MissingContextError
from rlstream.rewards.base import RewardContext
from rlstream.rewards.registry import get_reward
from rlstream.sampledata import generate_transcripts
from rlstream.sampledata.write import policy_text

pytestmark = pytest.mark.unit
REWARDS = {
    "support": ("customer_support", "tool_calling", "outcome"),
    "math": ("gsm8k",),
    "policy": ("nsr",),
}


@pytest.fixture(scope="module")
def nsr_policy(tmp_path_factory: pytest.TempPathFactory) -> str:
    p = tmp_path_factory.mktemp("policy") / "refund_policy.yaml"
    p.write_text(policy_text())
    return str(p)


@pytest.mark.parametrize("domain", sorted(REWARDS))
def test_rewards_agree_exactly_with_known_labels(domain: str, nsr_policy: str) -> None:
    ts, truth = generate_transcripts(seed=11, n_tasks=40, rollouts_per_task=8, domain=domain)
    rewards = {
        n: get_reward(n, **({"policy": nsr_policy} if n == "nsr" else {})) for n in REWARDS[domain]
    }
    checked = disagreements = 0
    for t in ts:
        ct = truth.conversations[t.conversation_id]
        reference = truth.tasks[ct.task_id].reference
        for name, reward in rewards.items():
            ctx = RewardContext(reference=reference) if name == "tool_calling" else RewardContext()
            try:
                got: bool | None = reward(t, ctx).passed
            except MissingContextError:
                got = None
            checked += 1
            disagreements += got != ct.expected[name]
    assert checked >= 320 and disagreements == 0


def test_pass_rate_spread_rephrasing_and_planted_problems() -> None:
    ts, truth = generate_transcripts(seed=7, n_tasks=60, rollouts_per_task=8, domain="support")
    rates = [t.true_pass_rate for t in truth.tasks.values()]
    assert 0.0 in rates and 1.0 in rates and sum(0 < r < 1 for r in rates) > len(rates) / 3
    openers: dict[str, set[str]] = defaultdict(set)
    for t in ts:
        if truth.conversations[t.conversation_id].duplicate_of is None:
            openers[str(t.metadata["task_id"])].add(t.first_user_message or "")
    assert sum(len(v) for v in openers.values()) / len(openers) > 6  # users rephrase
    convs = truth.conversations.values()
    assert any(c.truncated for c in convs)
    dups = [c for c in convs if c.duplicate_of]
    assert dups
    by_id = {t.conversation_id: t for t in ts}
    for d in dups:
        assert by_id[d.conversation_id].messages == by_id[d.duplicate_of or ""].messages
    for c in convs:
        if c.truncated:
            assert by_id[c.conversation_id].messages[-1].role != "assistant"
    kinds = {p.kind for p in truth.pii}
    assert {"email", "phone", "card", "iban", "ssn", "ip", "api_key"} <= kinds
    for p in truth.pii[:50]:
        assert p.value in (by_id[p.conversation_id].messages[p.message_index].content or "")


def test_determinism_and_domain_aliases() -> None:
    a, ta = generate_transcripts(seed=4, n_tasks=5, rollouts_per_task=3, domain="gsm8k")
    b, tb = generate_transcripts(seed=4, n_tasks=5, rollouts_per_task=3, domain="math")
    assert [t.dump_json() for t in a] == [t.dump_json() for t in b]
    assert ta == tb
    c, _ = generate_transcripts(seed=5, n_tasks=5, rollouts_per_task=3, domain="math")
    assert [t.dump_json() for t in a] != [t.dump_json() for t in c]
    with pytest.raises(ConfigError):
        generate_transcripts(seed=1, n_tasks=1, rollouts_per_task=1, domain="poetry")
