"""Task keys: explicit ids win, openers hash after normalisation, near-dup merge is safe."""

from __future__ import annotations

from collections import Counter

import pytest

from rlstream.taskkey import OpenerIndex, TaskKeyResolver, normalise_text, opener_key
from rlstream.transcript.model import Message, Transcript

pytestmark = pytest.mark.unit

SYSTEM = "You are the support agent for ExampleShop. Today is 2024-03-05."

TASKS: dict[str, list[str]] = {
    "cancel": [
        "I want to cancel my order 1234",
        "Hi, I'd like to cancel my order 5678 please",
        "Can you help me cancel order 999?",
        "Please cancel my order #42",
    ],
    "address": [
        "I need to change the shipping address on my order 77",
        "Hi, I'd like to change the shipping address for order 12 please",
    ],
    "refund": [
        "What is your refund policy for damaged items?",
        "Could you tell me the refund policy for damaged items?",
    ],
    "return": ["I want to return my order 1234"],
}


def _t(cid: str, opener: str, task: str | None = None, system: str = SYSTEM) -> Transcript:
    return Transcript(
        conversation_id=cid,
        messages=(
            Message(role="system", content=system),
            Message(role="user", content=opener),
            Message(role="assistant", content="Sure."),
        ),
        metadata={"task_id": task} if task else {},
        tools=({"name": "cancel_order"}, {"name": "get_order"}),
    )


def _rows(with_task: bool) -> list[tuple[str, Transcript]]:
    return [
        (task, _t(f"{task}-{i}", text, task if with_task else None))
        for task, texts in TASKS.items()
        for i, text in enumerate(texts)
    ]


def test_normalisation_masks_case_space_numbers_and_pii() -> None:
    assert (
        normalise_text("  Cancel   ORDER 1234 for bob@example.com ")
        == "cancel order # for <email_#>"
    )
    assert opener_key(_t("a", "Cancel order 1")) == opener_key(_t("b", "cancel  ORDER 77"))
    assert opener_key(_t("a", "Cancel order 1")) != opener_key(
        _t("b", "Cancel order 1", system="Other")
    )


def test_rephrased_openers_split_by_opener_but_group_by_task_field() -> None:
    by_opener = Counter(TaskKeyResolver().resolve(t)[0] for _, t in _rows(with_task=False))
    assert len(by_opener) >= 8  # 9 rows, nearly all singletons
    resolver = TaskKeyResolver()
    keyed = [(task, *resolver.resolve(t)) for task, t in _rows(with_task=True)]
    assert {rule for _, _, rule in keyed} == {"explicit"}
    groups: dict[str, set[str]] = {}
    for task, key, _ in keyed:
        groups.setdefault(key, set()).add(task)
    assert len(groups) == len(TASKS) and all(len(v) == 1 for v in groups.values())


def test_configured_dotted_field_reads_the_raw_record() -> None:
    resolver = TaskKeyResolver(field="meta.scenario")
    t = _t("x", "hello")
    key, rule = resolver.resolve(t, raw={"meta": {"scenario": 17}})
    assert (key, rule) == ("meta.scenario:17", "explicit")
    assert resolver.resolve(t, raw={"meta": {}})[1] == "opener"


def test_near_dup_merge_groups_rephrasings_and_keeps_tasks_apart() -> None:
    resolver = TaskKeyResolver(near_dup_merge=True, threshold=0.7)
    keys: dict[str, set[str]] = {}
    rules = Counter()
    for task, t in _rows(with_task=False):
        key, rule = resolver.resolve(t)
        keys.setdefault(task, set()).add(key)
        rules[rule] += 1
    assert all(len(v) == 1 for v in keys.values()), keys  # each task is one group
    assert len({next(iter(v)) for v in keys.values()}) == len(TASKS)  # no two tasks merged
    assert rules["merged"] >= 4


def test_near_dup_merge_is_scoped_to_system_prompt_and_tools() -> None:
    resolver = TaskKeyResolver(near_dup_merge=True)
    a = resolver.resolve(_t("a", "I want to cancel my order 1"))[0]
    b = resolver.resolve(_t("b", "please cancel my order 2", system="A different agent"))[0]
    assert a != b


def test_opener_index_threshold_and_idempotence() -> None:
    idx = OpenerIndex(threshold=0.9)
    k1 = idx.add("k1", "cancel my order", "ctx")
    assert idx.add("k2", "cancel order", "ctx") == k1
    assert idx.add("k3", "cancel my subscription", "ctx") == "k3"
    assert idx.add("k3", "anything", "ctx") == "k3"
    with pytest.raises(ValueError):
        OpenerIndex(threshold=0)


def test_explicit_key_from_raw_record_never_carries_pii() -> None:
    key, rule = TaskKeyResolver(field="user").resolve(
        _t("x", "hi"), raw={"user": "bob@example.com"}
    )
    assert rule == "explicit" and "bob" not in key and key.startswith("user:pii-")
    again, _ = TaskKeyResolver(field="user").resolve(_t("y", "yo"), raw={"user": "bob@example.com"})
    assert again == key
