"""``rlstream dlq list|show|replay`` on real Kafka, Postgres and Redis with the services
(issue 20 item 4): letters go back onto their source topic marked; after a fix 100
dead-lettered transcripts are scored once each, and a second replay duplicates nothing; a
redacted letter replays as redacted."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers import count, wait_until
from test_no_stall import caught_up
from test_poison import dlq_entries, send

from rlstream.delivery.replay import REPLAY, REPLAYED_FROM
from rlstream.events import topics
from rlstream_testkit.stack import conversation, encode, produce, read_topic

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]

EMAIL = "jane.doe@example.com"
NO_SPEC = "agents:\n  other-bot:\n    - {name: outcome}\n"
FIXED = "default:\n  - {name: outcome}\n"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rlstream.services.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


def _ok(*args: str) -> str:
    res = _cli(*args)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def _marked(recs: list[Any]) -> list[Any]:
    return [r for r in recs if any(k == REPLAY for k, _ in r.headers)]


def test_replay_puts_letters_back_marked_and_redacted_ones_as_redacted(make_stack: Any) -> None:
    st = make_stack()
    st.start("ingest")
    raw = st.topic(topics.CONVERSATIONS_RAW)
    plain = orjson.dumps({"conversation_id": "bad-1", "messages": "not a list"})
    secret = orjson.dumps({"conversation_id": "bad-2", "messages": f"mail {EMAIL}"})
    asyncio.run(
        send(st.bootstrap, raw, [(b"bad-1", plain, [("trace", b"t1")]), (b"bad-2", secret, [])])
    )
    assert len(dlq_entries(st, topics.CONVERSATIONS_RAW, 2)) == 2

    listed = _ok("dlq", "list", raw, "--bootstrap", st.bootstrap)
    assert "2 dead letters, 2 replayable (1 redacted" in listed
    everything = _ok("dlq", "list", "--prefix", st.prefix, "--bootstrap", st.bootstrap)
    assert f"{raw}.dlq" in everything and "2 dead letters" in everything
    shown = _ok("dlq", "show", raw, "--bootstrap", st.bootstrap)
    assert "unknown_format" in shown and "redacted" in shown and EMAIL not in shown
    assert "2 of 2 dead letters shown" in shown
    every = _ok("dlq", "show", raw, "--json", "--bootstrap", st.bootstrap)
    (red,) = [e for e in map(json.loads, every.splitlines()) if e["value_redacted"]]
    at = "/".join(red["at"].split("/")[-2:])
    one = _ok("dlq", "show", raw, "--at", at, "--json", "--bootstrap", st.bootstrap)
    (entry,) = [json.loads(line) for line in one.splitlines()]
    assert entry == red and entry["error_code"] == "unknown_format"

    done = _ok("dlq", "replay", raw, "--replay-id", "r1", "--bootstrap", st.bootstrap)
    assert "replayed 2 of 2" in done and "1 redacted" in done

    again = wait_until(lambda: _marked(asyncio.run(read_topic(st.bootstrap, raw))), 30)
    by_key = {r.key: r for r in again}
    assert by_key[b"bad-1"].value == plain and ("trace", b"t1") in list(by_key[b"bad-1"].headers)
    assert (REPLAY, b"r1") in list(by_key[b"bad-1"].headers)
    assert dict(by_key[b"bad-1"].headers)[REPLAYED_FROM].startswith(f"{raw}.dlq/".encode())
    assert EMAIL.encode() not in by_key[b"bad-2"].value  # replayed as stored: redacted
    # ingest rejects both again, for the same reason: replay is for after the fix
    letters = dlq_entries(st, topics.CONVERSATIONS_RAW, 4)
    assert [e["error_code"] for e in letters].count("unknown_format") == 4


def test_a_redacted_letter_replays_redacted_after_the_fix(make_stack: Any) -> None:
    st = make_stack()
    small = st.service("ingest", RLSTREAM_MAX_MESSAGE_BYTES="3000")
    small.start()
    small.wait_ready()
    raw = st.topic(topics.CONVERSATIONS_RAW)
    conv = conversation("big-1", "t1", True)
    conv["messages"][1]["content"] += f" Write to {EMAIL}. " + "My parcel is late. " * 200
    asyncio.run(produce(st.bootstrap, raw, encode([conv])))
    (letter,) = dlq_entries(st, topics.CONVERSATIONS_RAW, 1)
    assert letter["error_code"] == "message_too_large" and letter["value_redacted"]
    assert not letter["value_truncated"]

    small.stop()  # the fix: the default size limit
    fixed = st.service("ingest")
    fixed.start()
    fixed.wait_ready()
    done = _ok("dlq", "replay", raw, "--bootstrap", st.bootstrap)
    assert "replayed 1 of 1" in done and "1 redacted, replayed as redacted" in done
    q = "SELECT count(*) FROM transcripts WHERE conversation_id = 'big-1'"
    assert wait_until(lambda: count(st.dsn, q) == 1, 60), fixed.tail()
    body = count(st.dsn, "SELECT count(*) FROM transcripts WHERE body::text LIKE $1", f"%{EMAIL}%")
    assert body == 0
    for name in (topics.CONVERSATIONS_RAW, topics.TRANSCRIPTS):
        recs = asyncio.run(read_topic(st.bootstrap, st.topic(name)))
        assert not [r for r in _marked(recs) if EMAIL.encode() in (r.value or b"")]
    (out,) = asyncio.run(read_topic(st.bootstrap, st.topic(topics.TRANSCRIPTS)))
    assert "My parcel is late." in json.loads(out.value)["messages"][1]["content"]


def test_a_dlq_replay_after_a_fix_scores_100_once_and_a_second_run_adds_nothing(
    make_stack: Any, tmp_path: Path
) -> None:
    st = make_stack()
    rewards = tmp_path / "rewards.yaml"
    rewards.write_text(NO_SPEC)
    st.start("ingest")
    grader = st.service("grader", RLSTREAM_REWARD_CONFIG=str(rewards))
    grader.start()
    grader.wait_ready()
    n = 100
    convs = [conversation(f"d{i}", f"t{i % 9}", i % 3 != 0) for i in range(n)]
    asyncio.run(produce(st.bootstrap, st.topic(topics.CONVERSATIONS_RAW), encode(convs)))
    letters = dlq_entries(st, topics.TRANSCRIPTS, n)
    assert Counter(e["error_code"] for e in letters) == {"no_reward_spec": n}
    assert count(st.dsn, "SELECT count(*) FROM rollouts") == 0

    grader.stop()  # the fix: a reward for every agent
    rewards.write_text(FIXED)
    grader = st.service("grader", RLSTREAM_REWARD_CONFIG=str(rewards))
    grader.start()
    grader.wait_ready()
    tr = st.topic(topics.TRANSCRIPTS)
    assert f"{n} dead letters, {n} replayable" in _ok(
        "dlq", "list", tr, "--bootstrap", st.bootstrap
    )
    dry = _ok(
        "dlq", "replay", tr, "--code", "no_reward_spec", "--dry-run", "--bootstrap", st.bootstrap
    )
    assert f"would replay {n} of {n}" in dry
    assert "would replay 0 of 0" in _ok(
        "dlq", "replay", tr, "--code", "other", "--dry-run", "--bootstrap", st.bootstrap
    )
    first = _ok("dlq", "replay", tr, "--code", "no_reward_spec", "--replay-id", "fix-1",
                "--bootstrap", st.bootstrap)  # fmt: skip
    assert f"replayed {n} of {n}" in first

    def rollouts() -> int:
        return count(st.dsn, "SELECT count(*) FROM rollouts")

    assert wait_until(lambda: rollouts() == n, 120), f"{rollouts()} of {n}\n{grader.tail()}"
    assert wait_until(lambda: caught_up(st, "grader", topics.TRANSCRIPTS), 60)

    second = _ok("dlq", "replay", tr, "--replay-id", "fix-2", "--bootstrap", st.bootstrap)
    assert f"replayed {n} of {n}" in second
    wait_until(lambda: len(asyncio.run(read_topic(st.bootstrap, tr))) >= 3 * n, 30)
    assert wait_until(lambda: caught_up(st, "grader", topics.TRANSCRIPTS), 60)

    scored = asyncio.run(read_topic(st.bootstrap, st.topic(topics.SCORED)))
    ids = [json.loads(r.value)["rollout_id"] for r in scored]
    assert len(ids) == n and len(set(ids)) == n  # 100 scored, none twice
    assert rollouts() == n
    assert all((REPLAY, b"fix-1") in list(r.headers) for r in scored)  # the marker, carried on
    dlq_now = asyncio.run(read_topic(st.bootstrap, st.topic(topics.dlq(topics.TRANSCRIPTS))))
    assert len(dlq_now) == n  # nothing rejected again


def test_replay_of_a_topic_without_dead_letters_says_so(make_stack: Any) -> None:
    st = make_stack()
    res = _cli("dlq", "replay", "no-such-topic", "--bootstrap", st.bootstrap)
    assert res.returncode != 0 and "nothing was dead-lettered" in (res.stdout + res.stderr)
