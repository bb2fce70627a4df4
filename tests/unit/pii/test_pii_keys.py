"""Keyed pseudonyms (issue 20): a stand-in cannot be recomputed from a list of raw values
without the key, is stable for one key, names its key, and the CLI keys it when told to."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from pathlib import Path

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from rlstream.errors import ConfigError
from rlstream.formats import to_format
from rlstream.pii import keys
from rlstream.pii.fields import safe_id
from rlstream.pii.redact import pii_free_id, redact_transcript
from rlstream.services.cli.main import app
from rlstream.settings import Settings
from rlstream.taskkey.resolve import explicit_key
from rlstream.transcript import Message, Transcript

pytestmark = pytest.mark.unit

KEY = "k" * 32 + "-first-test-key"
OTHER = "o" * 32 + "-second-test-key"
KEYED = re.compile(r"^pii-[0-9a-f]{8}-[0-9a-f]{24}$")
UNKEYED = re.compile(r"^pii-[0-9a-f]{24}$")
#: what an attacker holds: the customers' addresses and numbers, in every spelling
RAW = [
    "jane.doe@example.com",
    "JANE.DOE@EXAMPLE.COM",
    "bob@example.org",
    "+1 415 555 0132",
    "14155550132",
    "user:jane.doe@example.com",
    "session-jane.doe@example.com",
]


def _candidates(value: str) -> set[str]:
    """Every stand-in an attacker without the key can compute for ``value``."""
    data = value.encode()
    out = {keys.unkeyed_stand_in(value)}
    for size in (12, 16, 32, 64):
        out.add("pii-" + hashlib.blake2b(data, digest_size=size).hexdigest())
    out.add("pii-" + hashlib.sha256(data).hexdigest()[:24])
    for guess in (b"", b"rlstream", b"secret", b"0" * 32):  # a keyed form, guessed keys
        out.add("pii-" + hmac.digest(guess, data, "sha256").hex()[:24])
    return out


def test_format_and_key_id() -> None:
    p = keys.Pseudonymiser(KEY.encode())
    got = p.stand_in("jane.doe@example.com")
    assert KEYED.match(got) and got.split("-")[1] == p.key_id
    assert p.key_id == hmac.digest(KEY.encode(), b"rlstream pii key id", "sha256").hex()[:8]
    assert KEY not in repr(p)
    assert UNKEYED.match(keys.unkeyed_stand_in("jane.doe@example.com"))


def test_stable_for_one_key_and_different_per_key() -> None:
    a, a2, b = (keys.Pseudonymiser(k.encode()) for k in (KEY, KEY, OTHER))
    assert a.key_id == a2.key_id and a.key_id != b.key_id
    for v in RAW:
        assert a.stand_in(v) == a2.stand_in(v)
        assert a.stand_in(v)[13:] != b.stand_in(v)[13:]  # the digests differ too
    assert len({a.stand_in(v) for v in RAW}) == len(RAW)


def test_recomputing_from_raw_values_fails_without_the_key() -> None:
    """The stored ids (a conversation id, a task key, a field) of a service with a key,
    against every stand-in computable from the attacker's list: none matches; with the key
    all do (so the comparison is not vacuous)."""
    keys.configure(keys.Pseudonymiser(KEY.encode()))
    t = Transcript(
        conversation_id="session-jane.doe@example.com",
        metadata={"task_id": "user:jane.doe@example.com"},
        messages=(Message(role="user", content="hi"),),
    )
    stored = {
        redact_transcript(t).conversation_id,
        (explicit_key(t) or "").removeprefix("task_id:"),
        safe_id("bob@example.org"),
        pii_free_id("+1 415 555 0132"),
    }
    assert len(stored) == 4 and all(KEYED.match(s) for s in stored)
    guessed = set().union(*(_candidates(v) for v in RAW))
    rebuilt = {s[:4] + s[13:] for s in stored}  # also with the key id cut out
    assert not (stored | rebuilt) & guessed
    with_key = {keys.Pseudonymiser(KEY.encode()).stand_in(v) for v in RAW}
    assert stored <= with_key


def test_without_a_key_the_local_form_stays() -> None:
    assert keys.current() is None
    v = "session-jane.doe@example.com"
    assert pii_free_id(v) == "pii-" + hashlib.blake2b(v.encode(), digest_size=12).hexdigest()


def test_settings_key_file_and_their_errors(tmp_path: Path) -> None:
    assert keys.from_settings(Settings()) is None
    p = keys.from_settings(Settings(pii_key=SecretStr(KEY)))
    assert p is not None and p.key_id == keys.Pseudonymiser(KEY.encode()).key_id
    f = tmp_path / "pii-key"
    f.write_text(KEY + "\n")  # a mounted Secret file ends with a newline
    from_file = keys.from_settings(Settings(pii_key_file=f))
    assert from_file is not None and from_file.key_id == p.key_id
    with pytest.raises(ConfigError, match=r"^RLSTREAM_PII_KEY: the key has 5 bytes, at least 32"):
        keys.from_settings(Settings(pii_key=SecretStr("short")))
    with pytest.raises(ConfigError, match="both set"):
        keys.from_settings(Settings(pii_key=SecretStr(KEY), pii_key_file=f))
    with pytest.raises(ConfigError, match=r"^RLSTREAM_PII_KEY_FILE: cannot read .*absent"):
        keys.from_settings(Settings(pii_key_file=tmp_path / "absent"))


def test_a_service_needs_a_key_unless_it_is_the_demo() -> None:
    with pytest.raises(ConfigError) as err:
        keys.configure_from_settings(Settings(), service=True)
    msg = str(err.value)
    assert msg.startswith("RLSTREAM_PII_KEY is not set") and "\n" not in msg
    assert "RLSTREAM_EMBEDDED_POSTGRES=true" in msg
    assert keys.configure_from_settings(Settings(embedded_postgres=True), service=True) is None
    assert keys.configure_from_settings(Settings()) is None  # the CLI, the batch pipeline
    p = keys.configure_from_settings(Settings(pii_key=SecretStr(KEY)), service=True)
    assert p is not None and keys.current() is p


def test_the_cli_keys_stand_ins_when_a_key_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = Transcript(
        conversation_id="session-jane.doe@example.com",
        messages=(
            Message(role="user", content="Where is my order?"),
            Message(role="assistant", content="It has shipped."),
        ),
    )
    logs = tmp_path / "in.jsonl"
    logs.write_text(json.dumps(to_format(t, "openai")) + "\n")
    ids = []
    for env in (None, KEY):
        if env is not None:
            monkeypatch.setenv("RLSTREAM_PII_KEY", env)
        out = tmp_path / f"t{len(ids)}.jsonl"
        res = CliRunner().invoke(app, ["ingest", str(logs), "--out", str(out)])
        assert res.exit_code == 0, res.output
        [got] = [json.loads(x) for x in out.open()]
        ids.append(got["conversation_id"])
    assert ids == [
        keys.unkeyed_stand_in(t.conversation_id),
        keys.Pseudonymiser(KEY.encode()).stand_in(t.conversation_id),
    ]
    monkeypatch.setenv("RLSTREAM_PII_KEY", "short")
    res = CliRunner().invoke(app, ["ingest", str(logs), "--out", str(tmp_path / "x.jsonl")])
    assert isinstance(res.exception, ConfigError)  # rlstream's entry prints it, exit 2
    assert str(res.exception).startswith("RLSTREAM_PII_KEY: the key has 5 bytes")
