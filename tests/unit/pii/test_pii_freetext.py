"""PII that only prose reveals: names, street addresses, postcodes, written dates of birth,
passport numbers; measured also on a public benchmark's templates and people."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rlstream.pii.redact import redact_text

pytestmark = pytest.mark.unit
BENCH = Path(__file__).resolve().parents[3] / "bench"

#: the issue's realistic support messages: every one of these leaked before
LEAKS = [
    ("Hi, I'm Maria Gonzalez and my parcel never came.", "Maria Gonzalez", "NAME"),
    ("This is John O'Connor, calling about my refund.", "John O'Connor", "NAME"),
    ("That fixed it. Thanks, Kenji", "Kenji", "NAME"),
    ("Please send it to 221B Baker Street, London NW1 6XE.", "221B Baker Street", "ADDRESS"),
    ("Our office: 1600 Pennsylvania Avenue NW, Washington, DC 20500", "Pennsylvania", "ADDRESS"),
    ("My postcode is NW1 6XE if that helps", "NW1 6XE", "ADDRESS"),
    ("For the record I was born on March 3, 1990.", "March 3, 1990", "DOB"),
    ("Date of birth: 3rd of March 1990", "March 1990", "DOB"),
    ("My passport number is X1234567, expiring 2031.", "X1234567", "PASSPORT"),
    ("Could you ask Dr. Shimasaki to call back?", "Shimasaki", "NAME"),
]

#: look-alikes that must stay: versions, prices, order numbers, dates that are not births
KEEP = [
    "Version 3.2.1 costs $45.99; order A-1234 shipped May 3, 2024.",
    "Your order #88231 will arrive on Monday, March 3, 2025.",
    "Step 4 of 10: restart the router, then wait 5 minutes.",
    "I'm sorry, This is Great. Will you help?",
    "The Customer Service team at the Bank will reply.",
    "Ticket PNR XPQEKE, seat 28E, gate B12.",
]


@pytest.mark.parametrize(("text", "secret", "kind"), LEAKS)
def test_free_text_pii_is_redacted(text: str, secret: str, kind: str) -> None:
    out = redact_text(text)
    assert secret not in out and f"<{kind}_1>" in out, out


@pytest.mark.parametrize("text", KEEP)
def test_look_alikes_are_kept(text: str) -> None:
    assert redact_text(text) == text


def test_public_benchmark_figures_hold() -> None:
    """Templates of presidio-research's PII benchmark filled with its FakeNameGenerator
    people (bench/pii_public.py): sources the detectors were not written against. The
    floors are the measured figures (see bench/README.md), so a regression fails here."""
    sys.path.insert(0, str(BENCH))
    try:
        import pii_eval
        import pii_public
    finally:
        sys.path.remove(str(BENCH))
    report, _ = pii_eval.evaluate_public(list(pii_public.generate(1000, seed=3)))
    assert report["ADDRESS"]["precision"] >= 0.98 and report["address"]["recall"] >= 0.85
    assert report["street_address"]["recall"] >= 0.85
    assert report["DOB"]["precision"] >= 0.98
    assert report["NAME"]["precision"] >= 0.75 and report["person"]["recall"] >= 0.5
    assert sum(pii_eval.negatives_false_positives(2000, 0).values()) == 0
