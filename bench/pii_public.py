"""An evaluation set for free-text PII built from public sources rlstream did not write.

Sentences: the templates of Microsoft's presidio-research PII benchmark
(``presidio_evaluator/data_generator/raw_data/templates.txt``, MIT licence, copied verbatim
into ``bench/data/pii_public/``). Values: the 3,000 people of the same project's
``FakeNameGenerator.com_3000.csv`` (names of 30+ name sets, street addresses, postcodes,
birthdays, companies), reduced to the columns used. Neither was used to write or tune the
detectors (those use the U.S. Census 1990 first-name lists of the ``names`` package).

Two disjoint splits (:func:`split_of`): ``tune`` (even template lines, even people rows) is
the one to look at while changing the detectors; ``heldout`` (odd lines, odd rows) is the one
to report. Both come from the same project, so the held-out split guards against fitting the
phrasing and the names, not against that project's choice of sentences.

Labelled kinds: NAME (``person``/``name`` = given + surname, ``first_name``, ``last_name``),
ADDRESS (``address``; ``building_number street_name`` [``secondary_address``]; ``postcode`` /
``zipcode``) and DOB (``date_of_birth`` written as "March 3, 1990", "3 March 1990" or
"3/29/1982"; in the one template with no birth cue, "It's like that since {{date_of_birth}}",
the date is labelled IGNORE: neither a miss nor a false positive). Street addresses come from the rows of English-speaking countries (US, GB,
CA, AU, NZ, ZA): the detectors read English street types. Every other placeholder
(organisations, cities, countries, cards, phones ...) is filled with a value and left
unlabelled, so a NAME or ADDRESS found there counts against precision.
"""

from __future__ import annotations

import csv
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "pii_public"
ENGLISH = ("US", "GB", "CA", "AU", "NZ", "ZA")
_SLOT = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class Example:
    text: str
    #: (start, end, kind, label): label is the template slot (person, address, postcode ...)
    spans: tuple[tuple[int, int, str, str], ...]


def _people() -> list[dict[str, str]]:
    with (DATA / "people.csv").open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _templates() -> list[str]:
    lines = (DATA / "templates.txt").read_text(encoding="utf-8").splitlines()
    return [ln.replace("\\n", "\n").replace("\\,", ",") for ln in lines if "{{" in ln]


def _written(birthday: str, rng: random.Random) -> str:
    m, d, y = (int(x) for x in birthday.split("/"))
    day = date(y, m, d)
    return rng.choice(
        [f"{day:%B} {d}, {y}", f"{d} {day:%B} {y}", f"{day:%b} {d}, {y}", f"{m}/{d}/{y}"]
    )


def _address(p: dict[str, str]) -> str:
    tail = " ".join(x for x in (p["State"], p["ZipCode"]) if x)
    return f"{p['StreetAddress']}, {p['City'].title()}" + (f", {tail}" if tail else "")


SPLITS = ("tune", "heldout", "all")
#: the templates' cue words for a birth date; a ``date_of_birth`` slot without one ("It's like
#: that since {{date_of_birth}}") is a date that no reader could tell is a birth date
_BIRTH_CUE = re.compile(r"(?i)birth|born|\bdob\b")


def split_of(i: int, split: str) -> bool:
    """Template / person ``i`` belongs to ``split``: even indices tune, odd ones are held out
    (disjoint sentences *and* disjoint people, so a rule fitted to one split's names or
    phrasing is measured on text it never saw)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}")
    return split == "all" or (i % 2 == 0) == (split == "tune")


def generate(n: int, seed: int = 0, split: str = "all") -> Iterator[Example]:
    """``n`` filled templates of ``split`` (each template in turn, values drawn at random)."""
    rng = random.Random(seed)
    people = [p for i, p in enumerate(_people()) if split_of(i, split)]
    english = [p for p in people if p["Country"] in ENGLISH]
    templates = [t for i, t in enumerate(_templates()) if split_of(i, split)]
    for i in range(n):
        template = templates[i % len(templates)]
        text_parts: list[str] = []
        spans: list[tuple[int, int, str, str]] = []
        pos = 0
        cursor = 0
        slots = list(_SLOT.finditer(template))
        j = 0
        while j < len(slots):
            m = slots[j]
            text_parts.append(template[cursor : m.start()])
            pos += m.start() - cursor
            slot = m.group(1)
            p, e = rng.choice(people), rng.choice(english)
            kind: str | None = None
            label = slot
            if slot in ("person", "name", "name_male", "name_female"):
                value, kind, label = f"{p['GivenName']} {p['Surname']}", "NAME", "person"
            elif slot.startswith("first_name"):
                value, kind, label = p["GivenName"], "NAME", "first_name"
            elif slot.startswith("last_name"):
                value, kind, label = p["Surname"], "NAME", "last_name"
            elif slot == "address":
                value, kind = _address(e), "ADDRESS"
            elif (
                slot == "building_number"
                and j + 1 < len(slots)
                and slots[j + 1].group(1) == "street_name"
            ):
                nxt = slots[j + 1]
                between = template[m.end() : nxt.start()]
                value, kind, label = e["StreetAddress"], "ADDRESS", "street_address"
                if between.strip():  # not adjacent: fill the number alone
                    value, kind = e["StreetAddress"].split()[0], None
                else:
                    j += 1
                    m = nxt
            elif slot in ("postcode", "zipcode"):
                value, kind, label = e["ZipCode"], "ADDRESS", "postcode"
            elif slot == "date_of_birth":
                value, kind = _written(p["Birthday"], rng), "DOB"
                if _BIRTH_CUE.search(_SLOT.sub("", template)) is None:
                    kind, label = "IGNORE", "date_no_birth_cue"
            else:
                value = _filler(slot, p, rng)
            text_parts.append(value)
            if kind is not None:
                spans.append((pos, pos + len(value), kind, label))
            pos += len(value)
            cursor = m.end()
            j += 1
        text_parts.append(template[cursor:])
        yield Example("".join(text_parts), tuple(spans))


def _filler(slot: str, p: dict[str, str], rng: random.Random) -> str:
    """Unlabelled values: things that are not the evaluated kinds."""
    simple = {
        "organization": p["Company"],
        "city": p["City"].title(),
        "country": rng.choice(["France", "Japan", "Brazil", "Kenya", "Canada", "Norway"]),
        "nationality": rng.choice(["French", "Japanese", "Brazilian", "Kenyan", "Canadian"]),
        "street_name": " ".join(w for w in p["StreetAddress"].split() if not w[0].isdigit()),
        "building_number": str(rng.randint(1, 999)),
        "secondary_address": f"Apt. {rng.randint(1, 99)}",
        "state_abbr": p["State"] or "NY",
        "prefix": p["Title"],
        "prefix_male": "Mr.",
        "prefix_female": rng.choice(["Ms.", "Mrs."]),
        "age": str(rng.randint(18, 90)),
        "year": str(rng.randint(1950, 2024)),
        "day_of_week": rng.choice(["Monday", "Tuesday", "Friday"]),
        "job": "accountant",
    }
    return simple.get(slot, f"<{slot}>")
