"""Every detector is linear in its input: hostile 1 MB texts finish in bounded time.

A quadratic detector let one 300 KB message block ingest's event loop for ~55 s
(repeated ``-----BEGIN PRIVATE KEY-----``). For each shape that pokes a detector (its
prefixes, separators, repeated matches), the time on 1 MB must stay within a small factor
of eight times the time on 128 KB (quadratic: 64x), and under an absolute bound. CPU time,
not wall time, so a busy machine does not fail the test.
"""

from __future__ import annotations

import time

import pytest

from rlstream.pii.detectors import find_spans
from rlstream.pii.redact import Redactor

pytestmark = pytest.mark.unit

SHAPES = {
    "pem_begin": "-----BEGIN PRIVATE KEY-----",
    "pem_begin_end": "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----\n",
    "pem_type_run": "-----BEGIN " + "A" * 60,
    "email_run": "ab@cd.ef ",
    "email_at": "a@",
    "email_labels": "x@a-a.",
    "jwt": "eyJaaaaaaaaaa.",
    "bearer": "bearer ",
    "token_kv": "token=",
    "api_key_kv": "api_key: ",
    "sk_prefix": "sk-",
    "url_userinfo": "://a:",
    "password_kv": "password: ",
    "digits": "1",
    "digits_space": "1 ",
    "digits_dash": "1-",
    "intl_phone": "+1 ",
    "national_phone": "0 ",
    "paren_phone": "(0",
    "ipv6_colons": "::",
    "ipv4_dots": "1.",
    "iban": "DE12 ",
    "upper_digits": "AB12",
    "phone_cue": "phone ",
    "dob_cue": "dob ",
    "ssn_cue": "ssn ",
}


def _cpu(text: str) -> float:
    t = time.process_time()
    find_spans(text)
    return time.process_time() - t


def _text(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_detectors_are_linear_on_hostile_1mb_input(shape: str) -> None:
    unit = SHAPES[shape]
    small = min(_cpu(_text(unit, 128 * 1024)) for _ in range(2))
    big = _cpu(_text(unit, 1024 * 1024))
    assert big < 20 * small + 0.5, f"{shape}: 128 KB {small:.3f}s, 1 MB {big:.3f}s"
    assert big < 15.0, f"{shape}: 1 MB took {big:.1f}s of CPU"


def test_private_key_flood_is_fast_and_a_real_key_is_still_found() -> None:
    flood = _text(SHAPES["pem_begin"], 1024 * 1024)
    assert _cpu(flood) < 5.0
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
    text = "BEGIN " + flood[:5000] + " here: " + key + " done"
    out = Redactor().text(text)
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in out and "<SECRET_1>" in out
