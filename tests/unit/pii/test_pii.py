"""PII detection and redaction: each type, stable placeholders, hard negatives, targets."""

from __future__ import annotations

import pytest

from rlstream.pii import Redactor, find_spans, redact_text, redact_transcript
from rlstream.pii.validators import iban_ok, luhn_ok
from rlstream.transcript.model import Message, ToolCall, Transcript
from rlstream_testkit.pii_synth import generate, generate_heldout, make_iban

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [
        (
            "write to Jane.Doe+shop@mail.example.org today",
            "Jane.Doe+shop@mail.example.org",
            "EMAIL",
        ),
        ("call +44 20 7946 0958 please", "+44 20 7946 0958", "PHONE"),
        ("call (415) 555-0132 please", "(415) 555-0132", "PHONE"),
        ("my mobile 4155550132", "4155550132", "PHONE"),
        ("card 4111 1111 1111 1111 ok", "4111 1111 1111 1111", "CARD"),
        ("amex 3782-822463-10005 ok", "3782-822463-10005", "CARD"),
        ("IBAN GB82 WEST 1234 5698 7654 32.", "GB82 WEST 1234 5698 7654 32", "IBAN"),
        ("ssn 078-05-1120.", "078-05-1120", "SSN"),
        ("from 203.0.113.7 at noon", "203.0.113.7", "IP"),
        ("from 2001:db8:85a3::8a2e:370:7334 at noon", "2001:db8:85a3::8a2e:370:7334", "IP"),
        (
            "key sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34 leaked",
            "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34",
            "API_KEY",
        ),
        ("aws AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE", "API_KEY"),
        (
            "gh ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 x",
            "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
            "API_KEY",
        ),
        ("slack xoxb-123456789012-abcdefABCDEF ok", "xoxb-123456789012-abcdefABCDEF", "API_KEY"),
        ("api_key=q8Zr2LmX9vT4kP7sW1nB", "q8Zr2LmX9vT4kP7sW1nB", "API_KEY"),
        ("Authorization: Bearer abcDEF123456ghiJKL789", "abcDEF123456ghiJKL789", "TOKEN"),
        ("password: Tr0ub4dor&3", "Tr0ub4dor&3", "SECRET"),
        ("postgres://admin:s3cret@db.internal/prod", "admin:s3cret", "SECRET"),
    ],
)
def test_detects_each_type(text: str, value: str, kind: str) -> None:
    spans = [(text[s.start : s.end], s.kind) for s in find_spans(text)]
    assert (value, kind) in spans


@pytest.mark.parametrize(
    "text",
    [
        "Order #A123456 total $1,234.56 shipped 2024-03-05 at 12:30:45",
        "order number 4111111111111111 is late",  # Luhn-valid but called an order id
        "card 4111 1111 1111 1112 declined",  # fails Luhn
        "IBAN DE00 3704 0044 0532 0130 00",  # fails mod-97
        "upgraded to version 1.2.3.4 and Windows 10.0.19045.2965, v2.3.1",
        "MAC 00:1A:2B:3C:4D:5E and time 12:30:45",
        "your password is required; the token limit is 4096",
        "ISBN 978-3-16-148410-0, SKU 123-456-789, zip 94107, 3 x 250 ml",
        "commit a94a8fe5ccb19ba61c4c0873d391e987982fbbd3",
    ],
)
def test_hard_negatives_are_left_alone(text: str) -> None:
    assert find_spans(text) == []


def test_checksums() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert iban_ok("GB82WEST12345698765432") and not iban_ok("GB83WEST12345698765432")
    assert iban_ok(make_iban("DE", "370400440532013000"))


def test_placeholders_are_typed_and_stable_within_a_conversation() -> None:
    r = Redactor()
    a = r.text("mail bob@example.com or BOB@example.com, not eve@example.com")
    b = r.text("again: bob@example.com")
    assert a == "mail <EMAIL_1> or <EMAIL_1>, not <EMAIL_2>"
    assert b == "again: <EMAIL_1>"
    assert redact_text("eve@example.com") == "<EMAIL_1>"  # numbering restarts per conversation


def test_redact_transcript_covers_every_slot() -> None:
    t = Transcript(
        conversation_id="c1",
        messages=(
            Message(role="system", content="Escalate to ops@example.com"),
            Message(role="user", content="I'm bob@example.com, card 4111 1111 1111 1111"),
            Message(
                role="assistant",
                tool_calls=(
                    ToolCall(
                        id="call_1",
                        name="lookup",
                        arguments={
                            "email": "bob@example.com",
                            "nested": [{"password": "hunter22"}],
                        },
                        raw_arguments='{"email": "bob@example.com"}',
                    ),
                ),
            ),
            Message(
                role="tool",
                tool_call_id="call_1",
                name="lookup",
                content='{"phone": "+1 415 555 0132"}',
            ),
        ),
        metadata={
            "customer": {"email": "bob@example.com", "phone": "4155550132"},
            "order": "A-1234",
        },
    )
    out = redact_transcript(t)
    dumped = out.dump_json().decode()
    assert out.redacted
    for secret in (
        "bob@example.com",
        "ops@example.com",
        "4111",
        "hunter22",
        "555 0132",
        "4155550132",
    ):
        assert secret not in dumped
    assert out.messages[1].content == "I'm <EMAIL_2>, card <CARD_1>"
    assert out.messages[2].tool_calls[0].arguments == {
        "email": "<EMAIL_2>",
        "nested": [{"password": "<SECRET_1>"}],
    }
    assert out.messages[2].tool_calls[0].raw_arguments == '{"email": "<EMAIL_2>"}'
    assert out.messages[2].tool_calls[0].id == "call_1"
    assert out.metadata["order"] == "A-1234"
    assert out.conversation_id == "c1"


@pytest.mark.parametrize("which", ["main", "heldout"])
def test_recall_and_precision_targets_on_generated_set(which: str) -> None:
    if which == "heldout":
        examples = list(generate_heldout(n=900, n_negative=600, seed=7))
    else:
        examples = list(generate(n_per_kind=300, n_negative=600, seed=7))
    tp = gold = pred = 0
    for ex in examples:
        g = set(ex.spans)
        p = {(s.start, s.end, s.kind) for s in find_spans(ex.text)}
        tp += len(g & p)
        gold += len(g)
        pred += len(p)
    assert gold == 300 * 9 if which == "main" else gold == 900
    assert tp / gold >= 0.99
    assert tp / pred >= 0.98


def test_conversation_id_carrying_pii_becomes_a_stable_hash() -> None:
    t = Transcript(
        conversation_id="bob@example.com", messages=(Message(role="user", content="hi"),)
    )
    a, b = redact_transcript(t), redact_transcript(t)
    assert a.conversation_id == b.conversation_id and a.conversation_id.startswith("pii-")
    assert "bob" not in a.dump_json().decode()
    plain = Transcript(conversation_id="conv-123", messages=(Message(role="user", content="hi"),))
    assert redact_transcript(plain).conversation_id == "conv-123"


def test_raw_argument_strings_follow_keyed_redaction() -> None:
    raw = '{"pin": "4821", "note": "call +1 415 555 0132"}'
    call = ToolCall(
        id="c",
        name="f",
        arguments={"pin": "4821", "note": "call +1 415 555 0132"},
        raw_arguments=raw,
    )
    untouched = ToolCall(id="d", name="g", arguments={"a": 1}, raw_arguments='{ "a" : 1 }')
    broken = ToolCall(
        id="e",
        name="h",
        arguments="{email: bob@example.com",
        raw_arguments="{email: bob@example.com",
    )
    t = Transcript(
        conversation_id="c",
        messages=(Message(role="assistant", tool_calls=(call, untouched, broken)),),
    )
    out = redact_transcript(t).messages[0].tool_calls
    assert "4821" not in (out[0].raw_arguments or "") and "555" not in (out[0].raw_arguments or "")
    assert out[0].arguments == {"pin": "<SECRET_1>", "note": "call <PHONE_1>"}
    assert out[1].raw_arguments == '{ "a" : 1 }'  # nothing to hide: kept byte for byte
    assert out[2].raw_arguments == "{email: <EMAIL_1>"


def test_json_tool_results_are_redacted_by_key_and_stay_json() -> None:
    import orjson

    body = {
        "name": {"first_name": "Mia", "last_name": "Li"},
        "address": {"address1": "975 Sunset Drive", "city": "Austin", "zip": "78750"},
        "dob": "1990-04-05",
        "email": "mia.li3818@example.com",
        "reservations": ["NO6JO3"],
    }
    t = Transcript(
        conversation_id="c",
        messages=(
            Message(role="tool", content=orjson.dumps(body).decode()),
            Message(role="tool", content='{"status": "ok"}'),
            Message(role="user", content="my date of birth is 1990-04-05"),
        ),
    )
    out = redact_transcript(t).messages
    got = orjson.loads(out[0].content or "")
    assert got["name"] == {"first_name": "<NAME_1>", "last_name": "<NAME_2>"}
    assert got["address"] == {"address1": "<ADDRESS_1>", "city": "Austin", "zip": "<ADDRESS_2>"}
    assert (got["dob"], got["email"], got["reservations"]) == ("<DOB_1>", "<EMAIL_1>", ["NO6JO3"])
    assert out[1].content == '{"status": "ok"}'  # nothing found: byte for byte
    assert out[2].content == "my date of birth is <DOB_1>"


def test_keyed_numbers_are_redacted_too() -> None:
    r = Redactor()
    assert r.value({"phone": 4155550132, "qty": 3, "pin": 4821}) == {
        "phone": "<PHONE_1>",
        "qty": 3,
        "pin": "<SECRET_1>",
    }


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("ping me at sam_o'neil@example.com", "sam_o'neil@example.com"),
        ("quoted 'bob@example.com' here", "bob@example.com"),
        ("Tel. 030/1234567", "030/1234567"),
        ("Büro +49 (0)30 901820", "+49 (0)30 901820"),
        ("call me at +1 (212) 555-0199 ext. 23", "+1 (212) 555-0199"),
    ],
)
def test_spot_checks_found_after_the_eval(text: str, value: str) -> None:
    assert value in [text[s.start : s.end] for s in find_spans(text)]


@pytest.mark.parametrize(
    "text",
    [
        "Meeting 09/15/2024 10:30, on 05/06/2024",
        "Your order #112-3456789-0123456 has shipped",
        "Build 20240315.1 passed 1532/1540 tests",
        "Account balance 1,250,000.00 as of 31.12.2023",
        "UUID 123e4567-e89b-12d3-a456-426614174000",
    ],
)
def test_more_hard_negatives(text: str) -> None:
    assert find_spans(text) == []


def test_json_returns_clean_values_as_is_and_numbers_pii() -> None:
    """A JSON value without PII comes back unchanged; one with PII is redacted and numbered."""
    from rlstream.pii.redact import Redactor

    tool = {"name": "lookup_order", "description": "Look an order up by its id, politely."}
    first = Redactor()
    assert first.json(tool) is tool and not first.found
    again = Redactor()
    assert again.json(dict(tool)) == tool and not again.found
    dirty = {"note": "mail jane.doe@example.com about order 1234", "x": "padding padding"}
    r = Redactor()
    out = r.json(dirty)
    assert out["note"] == "mail <EMAIL_1> about order 1234" and r.found["EMAIL"] == 1
    assert r.json(dirty)["note"] == "mail <EMAIL_1> about order 1234"
    assert r.found["EMAIL"] == 2


# issue 24: recursion-safe redaction of hostile nesting


@pytest.mark.parametrize("levels", [950, 1000, 1020, 1100, 5000])
def test_redact_payload_of_any_depth_never_recurses_and_leaks_nothing(levels: int) -> None:
    from rlstream.pii.fields import redact_payload

    raw = b'{"a":' * levels + b'"mail jane.doe@example.com"' + b"}" * levels
    out, changed = redact_payload(raw)
    assert changed and b"jane.doe@example.com" not in out


def test_the_redactor_walk_stops_at_the_shared_ceiling() -> None:
    from rlstream import limits
    from rlstream.errors import NestingTooDeep
    from rlstream.pii.fields import redact_deep
    from rlstream.pii.redact import Redactor

    v: object = "x"
    for _ in range(limits.MAX_DEPTH_CEILING + 1):
        v = [v]
    with pytest.raises(NestingTooDeep):
        Redactor().value(v)
    with pytest.raises(NestingTooDeep):
        redact_deep(v, Redactor())
    ok: object = "x"
    for _ in range(limits.MAX_DEPTH_CEILING):
        ok = {"k": ok}
    Redactor().value(ok)  # the deepest anything may be accepted with still redacts
