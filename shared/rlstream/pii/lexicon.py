"""Word lists behind the free-text name rules, all shipped in installed packages (offline).

* first names and surnames: the U.S. Census 1990 lists of the ``names`` package;
* ordinary words: the lower-case entries of SCOWL size 50 (``data/ordinary_words.txt.gz``,
  ``tools/build_ordinary_words.py``; licence in ``data/ordinary_words.LICENSE``). A
  capitalised word that is also an ordinary word ("Planet", "Union", "Frank") needs more
  than its shape to count as a name.
* proper nouns: the capitalised entries of Webster's Second International (1934, public
  domain) from the ``english-words`` package ("Victoria", "European"), often places.

* places: the cities (population >= 15,000), countries and U.S. states of GeoNames
  (``data/places.txt``, ``data/countries.txt``; CC BY 4.0, see their headers): "London", "Houston" and "Sydney" are
  census surnames or first names too, and alone they are far more often the place.

Each list is read once, on first use (about 0.3 s, ~20 MB for all three).
"""

from __future__ import annotations

import gzip
import os
from functools import lru_cache
from pathlib import Path

import names as census_names
from english_words import get_english_words_set


def _census(*files: str, top: int = 0) -> frozenset[str]:
    """Names of the census ``files`` (the ``top`` most frequent per file when given)."""
    folder = os.path.dirname(census_names.__file__)
    out: set[str] = set()
    for name in files:
        with open(os.path.join(folder, name), encoding="ascii") as fh:
            rows = [line.split()[0].lower() for line in fh if line.strip()]
        out.update(rows[:top] if top else rows)
    return frozenset(out)


@lru_cache(maxsize=1)
def first_names() -> frozenset[str]:
    """U.S. Census 1990 first names (male and female), lower-cased."""
    return _census("dist.male.first", "dist.female.first")


@lru_cache(maxsize=1)
def surnames() -> frozenset[str]:
    """U.S. Census 1990 surnames (88,799, many of them not English), lower-cased."""
    return _census("dist.all.last")


@lru_cache(maxsize=1)
def frequent_surnames() -> frozenset[str]:
    """The 1,000 most frequent census surnames (Smith ... Lewis ... Gates): common enough
    that "Jack Lewis" is a person although "jack" and "lewis" are also ordinary words."""
    return _census("dist.all.last", top=1000)


@lru_cache(maxsize=1)
def _web2() -> tuple[frozenset[str], frozenset[str]]:
    words = get_english_words_set(["web2"], lower=False, alpha=True)
    common = frozenset(w for w in words if w[:1].islower())
    proper = frozenset(w.lower() for w in words if w[:1].isupper()) - common
    return common, proper


@lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    """Ordinary English words (SCOWL 50, lower case). Not Webster's lower-case entries:
    those hold "maria", "eric", "anna", so the commonest first names never counted alone."""
    return _gz_lines("ordinary_words.txt.gz")


def proper_nouns() -> frozenset[str]:
    """Capitalised dictionary entries, lower-cased: places, peoples, given names."""
    return _web2()[1]


def _lines(name: str) -> frozenset[str]:
    path = Path(__file__).resolve().parent / "data" / name
    with path.open(encoding="utf-8") as fh:
        return frozenset(ln.strip().lower() for ln in fh if ln.strip() and ln[0] != "#")


@lru_cache(maxsize=1)
def places() -> frozenset[str]:
    """Lower-cased place names (cities, countries, U.S. states)."""
    return _lines("places.txt")


@lru_cache(maxsize=1)
def countries() -> frozenset[str]:
    """Lower-cased countries and U.S. states ("Kenya", "Georgia": never a person alone)."""
    return _lines("countries.txt")


def _gz_lines(name: str) -> frozenset[str]:
    path = Path(__file__).resolve().parent / "data" / name
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return frozenset(fh.read().split())


@lru_cache(maxsize=1)
def world_first_names() -> frozenset[str]:
    """First names ranked in the top 5,000 of at least one of 105 countries
    (``names-dataset``, Apache-2.0; ``tools/build_world_names.py``), lower-cased."""
    return _gz_lines("world_first_names.txt.gz")


@lru_cache(maxsize=1)
def world_surnames() -> frozenset[str]:
    """Surnames ranked in the top 5,000 of at least one of 105 countries, lower-cased."""
    return _gz_lines("world_surnames.txt.gz")


@lru_cache(maxsize=1)
def brown_clusters() -> dict[str, str]:
    """Lower-cased word (digit runs as "0") -> its Brown cluster path ("0110101"), from
    NLP4J's English lexicon (Apache-2.0; ``tools/build_brown_clusters.py``): words used alike
    in a large corpus share a path prefix, so the tagger generalises from "shouted" to
    "yelled" and from one surname to another it never saw."""
    path = Path(__file__).resolve().parent / "data" / "brown_clusters.txt.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        paths: dict[str, str] = {}
        out: dict[str, str] = {}
        for line in fh:
            word, bits = line.rstrip("\n").split("\t")
            out[word] = paths.setdefault(bits, bits)  # 1,500 distinct paths, shared
        return out
