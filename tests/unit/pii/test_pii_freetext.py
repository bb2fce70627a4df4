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

#: misses of the public benchmark's tuning split before the name / address rewrite
PUBLIC_MISSES = [
    ("Maybe it's under Viola McLean", "McLean", "NAME"),  # inner capital
    ("Mr. Matković is a 59 year old man", "Matković", "NAME"),  # Latin Extended-A
    ("What's your name? Ayda Tijsterman", "Tijsterman", "NAME"),  # cue: a name question
    ("the verses from Luiza Gomes's Cautionary Tales", "Gomes", "NAME"),  # possessive
    ("I want to add Oskar Juhl as a beneficiary", "Juhl", "NAME"),  # neither word listed
    ("It may be too that Johansen was influenced by", "Johansen", "NAME"),  # surname alone
    ("Michael is a very sympathetic person.", "Michael", "NAME"),  # first name alone
    ("Please tell me your date of birth. It's 11/29/1944", "11/29/1944", "DOB"),
    ("Send it to 17 St Omers Road, Hipperholme, HX3 4DR", "Omers", "ADDRESS"),
    ("It is at 2921 rue Parc, Sherbrooke, QC J1H 1R6.", "rue Parc", "ADDRESS"),
    ("User: 1570 Blanshard, Victoria, BC V8W 2H9", "Blanshard", "ADDRESS"),
    ("Markus Gerste\n\n2018 Main Street\n Apt. 57\n Emmen\n Norway 6139", "6139", "ADDRESS"),
    ("43 Farrar Parade, Koojan, WA 6510", "6510", "ADDRESS"),
    ("My zip code is 30303", "30303", "ADDRESS"),
    ("They had 6: Luke, Abderrahman, Marianne and Sam.", "Abderrahman", "NAME"),  # a list
    ("Fausto Calabrese but everyone calls me Alma", "Alma", "NAME"),
]

#: hostile shapes that leaked after the first rewrite (session 7's closing note)
HOSTILE = [
    ("Maria Kenji Smith Tanaka called about the refund.", "Tanaka", "NAME"),  # 4 names in a row
    ("Thanks, 👋 Kenji", "Kenji", "NAME"),  # an emoji between the cue and the name
    ("Kenji", "Kenji", "NAME"),  # under 7 characters: was never scanned
    ("Ms. Angus Stuart Apt. 19, 1467 Hastings St", "Angus Stuart", "NAME"),  # "Apt" in the run
    ("Anna said the parcel was late.", "Anna", "NAME"),  # "anna" is a word in Webster's
    ("Eric will call you back.", "Eric", "NAME"),  # so is "eric"
    ("Hi Maria I think it broke", "Maria", "NAME"),  # and SCOWL lists "maria" (mare)
    ("Reply from Nguyễn Văn Thành: the order is late.", "Thành", "NAME"),  # Latin Ext. Add.
    ("Forwarded by Tamara L Utsch / CA / TLS", "Utsch", "NAME"),  # initial without a stop
    # e-mail headers (Enron): comma-only lists, "Surname, Given" pairs
    ("To: Biever, Jason, Brodeur, Stephane, Cowan, Mike, Davies, Derek", "Cowan", "NAME"),
    ("Cc: Corman, Shelley; Rangel, Ina; Kirk, Steve", "Rangel", "NAME"),
    # chat in lower case: a cue, then a listed name
    ("hi my name is sarah connor and my order is late", "connor", "NAME"),
    ("ok thanks kenji", "kenji", "NAME"),
    ("this is dr. patel speaking", "patel", "NAME"),
]

#: look-alikes that must stay: versions, prices, order numbers, dates that are not births
KEEP = [
    "Version 3.2.1 costs $45.99; order A-1234 shipped May 3, 2024.",
    "Your order #88231 will arrive on Monday, March 3, 2025.",
    "Step 4 of 10: restart the router, then wait 5 minutes.",
    "I'm sorry, This is Great. Will you help?",
    "The Customer Service team at the Bank will reply.",
    "Ticket PNR XPQEKE, seat 28E, gate B12.",
    # places, organisations, products and ordinary capitalised words
    "I am flying to London next week, then Houston.",
    "by invoking Article 50 of the Treaty on European Union",
    "I used to work for Planet Pizza and Food Fair.",
    "The Princess Royal arrived at the airport this morning.",
    "My Galaxy Note and Apple Watch will not pair; Microsoft Teams keeps crashing.",
    "Frank feedback: the Grace period ends in May.",
    "Order 1234 ships to Austin today.",
    "PO Box 4505, growth +20% year over year",
    "It takes 5-30 minutes; zip 59179; SKU 123-456-789",
    "I bought it at Susie's Casuals last week.",
    "My friend lives in Oued Esseder",
    "The title refers to Verdandi Gränd street.",
    "Kenya was super fun to visit!",
    "I bought them at Karl's Shoes, then at McDade's.",
    "I work for Magik Lamp; before that for Forth & Towne.",
    "The Lord Of The Rings And The Hobbit",  # a stop word inside a run: a title
    "We met on Na Kopci Street in New York.",  # words next to a street or place word
    "Ok",
    "Date: Thu, 27 Dec 2001 07:14:30 -0800; sent Fri, 18 Jan 2002",  # months, days
    "It is under Grace period until Jan 5th.",
    # firms, employers and demonyms the tagger is sure of must still pass the rules' checks
    "The Kenyan Border Force have detained two men.",
    "I work for Huffman and Boyle.",
    "Ernst Home Centers opened a new branch.",
    "We ship to London, Paris, Berlin and Rome.",  # a list of places
    "Subject: Paris, France",  # a first name that is a place, then its country
    "thanks again, call me back after 5pm; my name is not important",  # lower case, no name
    "hi team, i am tired and this is great",
]


@pytest.mark.parametrize(("text", "secret", "kind"), LEAKS + PUBLIC_MISSES + HOSTILE)
def test_free_text_pii_is_redacted(text: str, secret: str, kind: str) -> None:
    out = redact_text(text)
    assert secret not in out and f"<{kind}_1>" in out, out


@pytest.mark.parametrize("text", KEEP)
def test_look_alikes_are_kept(text: str) -> None:
    assert redact_text(text) == text


def _bench(name: str):  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCH))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(BENCH))


def test_public_benchmark_held_out_figures() -> None:
    """The held-out split of bench/pii_public.py (presidio-research templates and
    FakeNameGenerator people, odd lines / rows: never trained on).

    The issue's target is recall >= 0.95 and precision >= 0.98 per kind. ADDRESS and DOB
    meet it; NAME does not (0.896 / 0.930 on --public 2000: bare first names and surnames
    of 30+ cultures without a cue, shops and firms named after people, small towns). The
    NAME floors below are the measured figures less a margin, so a regression fails; they
    are not the target."""
    pii_eval, pii_public = _bench("pii_eval"), _bench("pii_public")
    report, _ = pii_eval.evaluate_public(list(pii_public.generate(1000, seed=3, split="heldout")))
    for kind in ("ADDRESS", "DOB"):
        assert report[kind]["recall"] >= 0.95 and report[kind]["precision"] >= 0.98, kind
    assert report["person"]["recall"] >= 0.90  # given + surname
    assert report["NAME"]["recall"] >= 0.87 and report["NAME"]["precision"] >= 0.91
    assert sum(pii_eval.negatives_false_positives(2000, 0).values()) == 0


def test_names_on_text_annotated_by_others() -> None:
    """Sets never used to write or train the name detectors: Wikigold (Wikipedia prose,
    CC BY 4.0), the Enron e-mail coreference test split (Apache-2.0) and WNUT-17 test
    (YouTube, Stack Overflow, Twitter, Reddit; CC BY 4.0). Measured NAME recall / precision
    0.757 / 0.685, 0.895 / 0.949 and 0.403 / 0.699: far from the target (firms, places and
    works named like people; lower-case names in social media are found only after a cue
    such as "thanks"). The floors are the measured figures less a margin, so a
    regression fails; they are not the target. Other kinds are not scored (these sets
    label no addresses nor dates of birth)."""
    pii_eval, pii_wikigold, pii_corpora = (
        _bench("pii_eval"),
        _bench("pii_wikigold"),
        _bench("pii_corpora"),
    )
    report, _ = pii_eval.evaluate_public(list(pii_wikigold.generate()))
    assert report["NAME"]["gold"] == 934
    assert report["NAME"]["recall"] >= 0.73 and report["NAME"]["precision"] >= 0.66
    floors = {"enron_coref.test": (390, 0.86, 0.93), "wnut17.test": (424, 0.37, 0.66)}
    for name, path in pii_corpora.fresh_sets().items():
        gold, recall, precision = floors[name]
        report, _ = pii_eval.evaluate_public(list(pii_corpora.load(path)))
        assert report["NAME"]["gold"] == gold, name
        assert report["NAME"]["recall"] >= recall, name
        assert report["NAME"]["precision"] >= precision, name


def test_tagger_finds_names_the_rules_miss() -> None:
    """The trained tagger (rlstream.pii.tagger) adds names no rule takes: a first name in no
    census list, with no cue word ("Davorin is from Gemco"), and keeps ordinary
    capitalised words out."""
    from rlstream.pii import people, tagger

    text = "Davorin is from Gemco"
    assert people.names(text) == []
    assert [text[a:b] for a, b in tagger.names(text, [])] == ["Davorin"]
    plain = "Please Restart The Router And Check Again"
    assert tagger.names(plain, people.names(plain)) == []
