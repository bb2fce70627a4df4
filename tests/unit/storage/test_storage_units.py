"""Pure parts of the storage package: packaged migrations, records, SimHash."""

from __future__ import annotations

import json
import random

import pytest

from rlstream.rewards.base import RewardResult
from rlstream.rollout import ScoredRollout
from rlstream.storage import GroupKey, GroupStats, hamming, rollout_features, simhash64
from rlstream.storage.migrate import load_migrations
from rlstream.storage.neardup import NearDupIndex
from rlstream.transcript import Message, Transcript

pytestmark = pytest.mark.unit


def test_migrations_are_packaged_in_order() -> None:
    migs = load_migrations()
    assert [m.version for m in migs] == list(range(1, len(migs) + 1))
    assert migs[0].name == "init" and "CREATE TABLE rollouts" in migs[0].sql
    assert len({m.sha256 for m in migs}) == len(migs)


def test_group_label_is_unambiguous() -> None:
    a = GroupKey(agent="a|b", reward_spec="c", task_key="d")
    b = GroupKey(agent="a", reward_spec="b|c", task_key="d")
    assert a.label() != b.label()
    assert json.loads(a.label()) == ["a|b", "c", "d"]


def test_pass_rate() -> None:
    key = GroupKey(agent="", reward_spec="s", task_key="t")
    assert GroupStats(key=key, n=4, passes=1, sum_score=1.0).pass_rate == 0.25
    assert GroupStats(key=key, n=0, passes=0, sum_score=0.0).pass_rate == 0.0


def test_rollout_features_merge_every_reward() -> None:
    t = Transcript(conversation_id="c", messages=(Message(role="user", content="hi"),))
    results = tuple(
        RewardResult(
            reward=name, version="1", score=0.5, passed=True, threshold=0.5, features=feats
        )
        for name, feats in (("a", {"length": 1.0}), ("b", {"tool_calls": 2.0}))
    )
    r = ScoredRollout(
        rollout_id="r", transcript=t, results=results, score=0.5, passed=True, reward_spec="s"
    )
    assert rollout_features(r) == {"length": 1.0, "tool_calls": 2.0}


def test_simhash_is_stable_and_similarity_preserving() -> None:
    text = "the package arrived damaged and I would like a refund for order 5512"
    assert simhash64(text) == simhash64(text.upper())  # case-insensitive, deterministic
    close = hamming(simhash64(text), simhash64(text + " today"))
    far = hamming(simhash64(text), simhash64("what is the capital of france, asked the teacher"))
    assert close < far
    assert 0 <= simhash64("") < 2**64


def test_bands_guarantee_candidates_within_bands_minus_one() -> None:
    idx = NearDupIndex(redis=None, namespace="n", bands=4)  # type: ignore[arg-type]
    rng = random.Random(7)
    for _ in range(200):
        sig = rng.getrandbits(64)
        bits = rng.sample(range(64), 3)
        other = sig
        for b in bits:
            other ^= 1 << b
        assert set(idx._band_keys("s", sig)) & set(idx._band_keys("s", other))
    with pytest.raises(ValueError):
        NearDupIndex(redis=None, namespace="n", bands=5)  # type: ignore[arg-type]
