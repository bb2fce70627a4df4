"""Optional NER backend for person names: a local model, used in union with the built-ins.

The built-in name detectors (:mod:`rlstream.pii.people`, :mod:`rlstream.pii.tagger`) run
offline with no model to fetch. A user whose machines can fetch one names it in
``RLSTREAM_PII_NER_MODEL``: a local directory holding a transformers token-classification
model (``config.json`` with ``*ForTokenClassification`` and person labels, its tokenizer,
its weights) or a spaCy pipeline (a directory with ``meta.json``, or an installed
pipeline package's name). Its person spans are added to the built-ins' (a union: a name
either finds is redacted). Without the setting nothing changes.

Local files only: transformers loads with ``local_files_only=True`` and a directory is
required, so a hub name is refused instead of downloaded. Checked at start (a missing
path or a directory that is no token-classification model is one ConfigError line); the
model itself loads on first use, once per process.

Bounded like every detector: the model reads at most ``RLSTREAM_PII_NER_MAX_CHARS``
characters of a text (the built-ins read all of it), in windows of the model's length, so
its cost grows linearly with the text and stops at that cap (see docs/pii.md for figures).
"""

from __future__ import annotations

import importlib.util
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlstream.errors import ConfigError

if TYPE_CHECKING:  # settings are read once at start
    from rlstream.settings import Settings

#: characters of one text the model reads by default (the built-ins read every character)
DEFAULT_MAX_CHARS = 20_000
#: entity labels that mean a person (BIO prefixes stripped, case ignored)
PERSON_LABELS = frozenset({"per", "person", "pers", "people"})
_WINDOW_TOKENS = 510  # BERT-style models: 512 positions, two of them special tokens
_STRIDE_TOKENS = 64

Finder = Callable[[str], list[tuple[int, int]]]


@dataclass(frozen=True, slots=True)
class NerModel:
    """What ``RLSTREAM_PII_NER_MODEL`` named, checked: ``kind`` is transformers or spacy."""

    source: str
    kind: str
    max_chars: int = DEFAULT_MAX_CHARS


_config: NerModel | None = None
_finder: Finder | None = None
_lock = threading.Lock()


def _person(label: str) -> bool:
    return re.sub(r"^[BIES][-_]", "", label, flags=re.I).lower() in PERSON_LABELS


def _check_transformers(path: Path) -> None:
    cfg_file = path / "config.json"
    try:
        cfg = json.loads(cfg_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"RLSTREAM_PII_NER_MODEL: {path} has no readable config.json ({exc}); "
            "expected a transformers token-classification model directory or a spaCy pipeline"
        ) from exc
    archs = cfg.get("architectures") or []
    labels = [str(v) for v in (cfg.get("id2label") or {}).values()]
    if not any(str(a).endswith("ForTokenClassification") for a in archs):
        raise ConfigError(
            f"RLSTREAM_PII_NER_MODEL: {path} is not a token-classification model "
            f"(architectures {archs or 'none'})"
        )
    if not any(_person(lab) for lab in labels):
        raise ConfigError(
            f"RLSTREAM_PII_NER_MODEL: {path} has no person label (id2label {labels[:8]})"
        )
    if importlib.util.find_spec("transformers") is None:
        raise ConfigError(
            "RLSTREAM_PII_NER_MODEL: a transformers model needs the transformers package "
            "(the train extra)"
        )


def check(source: str, max_chars: int = DEFAULT_MAX_CHARS) -> NerModel:
    """``source`` as a :class:`NerModel`, or a one-line ConfigError saying what is wrong."""
    if max_chars < 1:
        raise ConfigError("RLSTREAM_PII_NER_MAX_CHARS must be at least 1")
    path = Path(source).expanduser()
    spacy_ok = importlib.util.find_spec("spacy") is not None
    if path.is_dir():
        if (path / "meta.json").is_file() and not (path / "config.json").is_file():
            if not spacy_ok:
                raise ConfigError(
                    f"RLSTREAM_PII_NER_MODEL: {path} is a spaCy pipeline; spaCy is not installed"
                )
            return NerModel(str(path), "spacy", max_chars)
        _check_transformers(path)
        return NerModel(str(path), "transformers", max_chars)
    if spacy_ok and re.fullmatch(r"[A-Za-z0-9_]+", source):
        import spacy.util

        if spacy.util.is_package(source):
            return NerModel(source, "spacy", max_chars)
    raise ConfigError(
        f"RLSTREAM_PII_NER_MODEL: {source} is not a local directory"
        + (" nor an installed spaCy pipeline" if spacy_ok else "")
        + " (models are never downloaded: fetch one, then name its directory)"
    )


def configure(model: NerModel | None) -> None:
    """Use ``model`` from now on (``None``: the built-ins alone); it loads on first use."""
    global _config, _finder
    with _lock:
        _config, _finder = model, None
    _forget_cached_findings()


def configure_from_settings(settings: Settings) -> NerModel | None:
    """The backend ``RLSTREAM_PII_NER_MODEL`` names (checked now), or ``None``."""
    source = settings.pii_ner_model
    model = None if not source else check(source, settings.pii_ner_max_chars)
    configure(model)
    return model


def current() -> NerModel | None:
    return _config


def _forget_cached_findings() -> None:
    """Findings cached under the old backend would hide the new one's names."""
    from rlstream.pii import detectors, fields

    detectors._find_cached.cache_clear()
    fields.has_pii.cache_clear()


def names(text: str) -> list[tuple[int, int]]:
    """Person spans the configured model finds in the first ``max_chars`` of ``text``;
    ``[]`` without one."""
    model = _config
    if model is None or not text.strip():
        return []
    finder = _finder or _load(model)
    return finder(text[: model.max_chars])


def _load(model: NerModel) -> Finder:
    global _finder
    with _lock:
        if _finder is None or _config is not model:
            try:
                loaded = _spacy(model) if model.kind == "spacy" else _transformers(model)
            except (OSError, ValueError, ImportError, RuntimeError) as exc:
                msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise ConfigError(
                    f"RLSTREAM_PII_NER_MODEL: cannot load {model.source}: {msg}"
                ) from exc
            if _config is model:
                _finder = loaded
            return loaded
        return _finder


def _spacy(model: NerModel) -> Finder:
    import spacy

    nlp = spacy.load(model.source, exclude=["parser", "lemmatizer", "tagger"])

    def find(text: str) -> list[tuple[int, int]]:
        return [(e.start_char, e.end_char) for e in nlp(text).ents if _person(e.label_)]

    return find


def _transformers(model: NerModel) -> Finder:
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    quiet: Any = hf_logging.disable_progress_bar  # untyped in transformers
    quiet()  # a service's log is JSON lines, not progress bars
    tok = AutoTokenizer.from_pretrained(model.source, local_files_only=True)
    net = AutoModelForTokenClassification.from_pretrained(model.source, local_files_only=True)
    net.eval()
    if not getattr(tok, "is_fast", False):
        raise ValueError("its tokenizer has no fast (offset-mapping) version")
    labels = {int(k): str(v) for k, v in net.config.id2label.items()}
    person = {i for i, lab in labels.items() if _person(lab)}
    begins = {i for i in person if labels[i][:1].upper() in ("B", "S")}
    # tokens per window: the model's positions less [CLS] / [SEP] (a tokenizer saved without
    # a length says 1e30)
    positions = int(getattr(net.config, "max_position_embeddings", 512) or 512)
    limit = max(8, min(_WINDOW_TOKENS, positions - 2, int(min(tok.model_max_length, 1e9)) - 2))

    def find(text: str) -> list[tuple[int, int]]:
        enc = tok(
            text,
            return_offsets_mapping=True,
            truncation=True,
            max_length=limit + 2,
            stride=min(_STRIDE_TOKENS, limit // 4),
            return_overflowing_tokens=True,
            padding=True,
            return_tensors="pt",
        )
        offsets = enc.pop("offset_mapping").tolist()
        enc.pop("overflow_to_sample_mapping", None)
        with torch.inference_mode():
            pred = net(**enc).logits.argmax(-1).tolist()
        spans: list[tuple[int, int]] = []
        for row, offs in zip(pred, offsets, strict=True):
            spans += person_runs(row, offs, person, begins)
        return _words(text, spans)

    return find


def person_runs(
    ids: list[int], offsets: list[list[int]], person: set[int], begins: set[int]
) -> list[tuple[int, int]]:
    """Character spans of consecutive person-labelled tokens: a B- label starts a new one,
    any other token (special and padding ones have offsets (0, 0)) ends one."""
    out: list[tuple[int, int]] = []
    cur: list[int] | None = None
    for label, (a, b) in zip(ids, offsets, strict=True):
        if b <= a or label not in person:
            if cur is not None:
                out.append((cur[0], cur[1]))
                cur = None
            continue
        if cur is None or label in begins:
            if cur is not None:
                out.append((cur[0], cur[1]))
            cur = [a, b]
        else:
            cur[1] = b
    if cur is not None:
        out.append((cur[0], cur[1]))
    return out


def _words(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans widened to whole words (a model tags word pieces), overlaps merged."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        while a > 0 and text[a - 1].isalnum():
            a -= 1
        while b < len(text) and text[b].isalnum():
            b += 1
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def union(found: list[tuple[int, int]], extra: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The built-ins' name spans with the model's added: overlapping spans become one."""
    if not extra:
        return found
    out: list[tuple[int, int]] = []
    for a, b in sorted([*found, *extra]):
        if out and a < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
