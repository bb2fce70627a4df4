"""Selector: the stored forms a value can take (keyed stand-in, unkeyed, bounded id), and
nothing of the value in what is recorded or printed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from rlstream.erasure import Selector, match_fields
from rlstream.errors import ConfigError
from rlstream.limits import bounded_id
from rlstream.pii import keys
from rlstream.pii.fields import safe_id

pytestmark = pytest.mark.unit

KEY = b"k" * 40


@pytest.fixture
def keyed() -> Iterator[keys.Pseudonymiser]:
    p = keys.Pseudonymiser(KEY)
    keys.configure(p)
    yield p
    keys.configure(None)


def test_a_user_key_matches_as_sent_keyed_and_unkeyed(keyed: keys.Pseudonymiser) -> None:
    forms = Selector(kind="user_key", value="C-20931").forms()
    assert set(forms) == {"C-20931", keyed.stand_in("C-20931"), keys.unkeyed_stand_in("C-20931")}


def test_without_a_key_only_the_unkeyed_form_is_computed() -> None:
    forms = Selector(kind="user_key", value="C-1").forms()
    assert set(forms) == {"C-1", keys.unkeyed_stand_in("C-1")}


def test_an_id_with_pii_matches_its_stand_in_and_a_long_one_its_digest(
    keyed: keys.Pseudonymiser,
) -> None:
    cid = "jane.doe@example.com-conv-1"
    assert safe_id(cid) in Selector(kind="conversation", value=cid).forms()
    long = "x" * 5000
    assert bounded_id(long) in Selector(kind="conversation", value=long).forms()


def test_a_raw_value_redacted_to_a_placeholder_is_not_a_form(keyed: keys.Pseudonymiser) -> None:
    forms = Selector(kind="user_value", value="jane.doe@example.com").forms()
    assert keyed.stand_in("jane.doe@example.com") in forms
    assert not any(f.startswith("<") for f in forms)  # <EMAIL_1> would match everybody


def test_the_description_never_holds_the_value() -> None:
    for kind in ("conversation", "user_key", "user_value", "agent"):
        s = Selector(
            kind=kind, value="jane.doe@example.com", field="email" if kind == "user_key" else None
        )  # type: ignore[arg-type]
        assert "jane" not in s.describe() and "jane" not in repr(s)


def test_blank_values_are_refused() -> None:
    with pytest.raises(ValidationError):
        Selector(kind="user_key", value="   ")


def test_fields_default_to_the_subject_fields_and_field_narrows() -> None:
    s = Selector(kind="user_key", value="x")
    assert match_fields(("customer_id", "email"), s) == ("customer_id", "email")
    assert match_fields(("customer_id",), Selector(kind="user_key", value="x", field="acct")) == (
        "acct",
    )
    with pytest.raises(ConfigError, match="RLSTREAM_SUBJECT_FIELDS"):
        match_fields((), s)
