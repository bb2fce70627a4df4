"""The optional NER backend (issue 20, item 6): plumbing with a tiny randomly initialised
transformers model built here, the union with the built-in detectors with a forced
prediction, the settings, the one-line errors, the character bound."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rlstream.errors import ConfigError
from rlstream.ingest.ingestor import Ingestor
from rlstream.pii import ner
from rlstream.pii.detectors import find_spans
from rlstream.pii.redact import redact_text
from rlstream.services.cli.main import app
from rlstream.settings import Settings, load_settings

pytestmark = pytest.mark.unit

transformers = pytest.importorskip("transformers")  # the train extra; CI installs it

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "please", "ask", "about", "it"]
WORDS += ["zor", "##bula", "##x", "quen", "the", "plan", ".", ","]
#: a name no word list holds and no cue introduces: the built-ins leave it
TEXT = "Please ask Zorbulax about the plan."
NAME = "Zorbulax"
LOWER = "please ask quen about it"  # lower case: the built-ins need a cue


def _build(path: Path, labels: dict[int, str] | None = None, arch: str = "token") -> Path:
    """A tiny BERT (one layer, 16 wide, random weights) and its word-piece tokenizer."""
    labels = labels or {0: "O", 1: "B-PER", 2: "I-PER"}
    tok = transformers.BertTokenizer(vocab={w: i for i, w in enumerate(WORDS)})
    cfg = transformers.BertConfig(
        vocab_size=len(WORDS),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    cls = (
        transformers.BertForTokenClassification
        if arch == "token"
        else transformers.BertForSequenceClassification
    )
    cls(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("ner") / "tiny")


@pytest.fixture(autouse=True)
def _no_backend() -> Iterator[None]:
    ner.configure(None)
    yield
    ner.configure(None)


class _Forced:
    """The real model, with person labels forced on the word pieces of ``zorbulax`` and
    ``quen`` (B- on the first piece): a model that knows the name the built-ins miss."""

    def __init__(self, net: Any) -> None:
        self.net, self.config, self.calls, self.positions = net, net.config, 0, 0
        self.ids = {WORDS.index(w) for w in ("zor", "##bula", "##x", "quen")}

    def eval(self) -> _Forced:
        self.net.eval()
        return self

    def __call__(self, **enc: Any) -> Any:
        self.calls += 1
        self.positions += int(enc["input_ids"].numel())
        out = self.net(**enc)
        logits = out.logits.detach().clone()
        logits[...] = 0.0
        logits[..., 0] = 1.0
        ids = enc["input_ids"]
        for r in range(ids.shape[0]):
            for c in range(ids.shape[1]):
                i = int(ids[r, c])
                if i in self.ids:
                    first = i in (WORDS.index("zor"), WORDS.index("quen"))
                    logits[r, c, 0] = 0.0
                    logits[r, c, 1 if first else 2] = 5.0
        out.logits = logits
        return out


@pytest.fixture
def forced(model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    made: list[Any] = []
    real = transformers.AutoModelForTokenClassification.from_pretrained

    def load(source: str, **kw: Any) -> Any:
        assert kw.get("local_files_only") is True  # never the hub
        made.append(_Forced(real(source, **kw)))
        return made[-1]

    monkeypatch.setattr(transformers.AutoModelForTokenClassification, "from_pretrained", load)
    return made


def test_the_tiny_random_model_loads_once_and_returns_spans_in_the_text(model_dir: Path) -> None:
    model = ner.check(str(model_dir))
    assert model.kind == "transformers"
    ner.configure(model)
    text = TEXT + " " + "please ask about it. " * 60  # several windows of the 62-token model
    spans = ner.names(text)
    assert all(0 <= a < b <= len(text) for a, b in spans)
    assert all(text[a:b].strip() == text[a:b] for a, b in spans)  # whole words
    assert ner._finder is not None
    first = ner._finder
    ner.names("Ask Quen.")
    assert ner._finder is first  # loaded once per process


def test_names_the_model_flags_are_redacted_in_union_with_the_built_ins(
    model_dir: Path, forced: list[Any]
) -> None:
    mixed = f"{TEXT} Thanks, Kenji Tanaka"
    alone = redact_text(mixed)
    assert NAME in alone and "Kenji" not in alone  # the built-ins miss it, find Kenji
    assert redact_text(LOWER) == LOWER
    assert find_spans(mixed)  # cached under the built-ins alone ...
    ner.configure(ner.check(str(model_dir)))
    out = redact_text(mixed)  # ... and the cache is dropped with the new backend
    assert out == "Please ask <NAME_1> about the plan. Thanks, <NAME_2>", out
    assert redact_text(LOWER) == "please ask <NAME_1> about it"
    assert len(forced) == 1 and forced[0].calls >= 1
    # the whole ingest path, configured from settings as the services and the CLI do
    ner.configure_from_settings(Settings(pii_ner_model=str(model_dir)))
    t = Ingestor().process(
        {"conversation_id": "n1", "messages": [{"role": "user", "content": TEXT}]}
    )
    assert NAME not in repr(t.model_dump()) and "<NAME_1>" in (t.messages[0].content or "")


def test_the_model_reads_at_most_max_chars_of_a_text(model_dir: Path, forced: list[Any]) -> None:
    ner.configure(ner.check(str(model_dir), max_chars=200))
    pad = "please ask about it. " * 20  # 420 characters
    assert NAME not in redact_text(TEXT + " " + pad)
    late = pad + TEXT
    assert NAME in redact_text(late)  # past the cap: the built-ins alone
    ner.configure(ner.check(str(model_dir), max_chars=1_000_000))
    assert NAME not in redact_text(late)
    # a 1 MB text: the model reads its first DEFAULT_MAX_CHARS only (windows overlap a little,
    # padding fills the last one), so its share stays as bounded as the other detectors'
    ner.configure(ner.check(str(model_dir)))
    big = (TEXT + " ") * (1024 * 1024 // (len(TEXT) + 1))
    t = time.process_time()
    ner.names(big)
    assert time.process_time() - t < 10.0
    assert len(forced) == 3  # each configure drops the loaded model; this call loaded one
    assert 0 < forced[-1].positions < 2 * ner.DEFAULT_MAX_CHARS < len(big) // 20


def test_without_a_model_nothing_changes() -> None:
    assert ner.current() is None and ner.names(TEXT) == []
    assert ner.configure_from_settings(Settings()) is None
    assert NAME in redact_text(TEXT)


def test_settings_and_environment(model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLSTREAM_PII_NER_MODEL", str(model_dir))
    monkeypatch.setenv("RLSTREAM_PII_NER_MAX_CHARS", "5000")
    s = load_settings()  # known variables: no "unknown RLSTREAM_*" refusal
    model = ner.configure_from_settings(s)
    assert model == ner.NerModel(str(model_dir), "transformers", 5000)
    assert ner.current() == model


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing", r"^RLSTREAM_PII_NER_MODEL: \S+ is not a local directory"),
        ("hub", r"^RLSTREAM_PII_NER_MODEL: some-org/some-ner-model is not a local directory"),
        ("empty", r"^RLSTREAM_PII_NER_MODEL: \S+ has no readable config.json"),
        ("sequence", r"^RLSTREAM_PII_NER_MODEL: \S+ is not a token-classification model"),
        ("no_person", r"^RLSTREAM_PII_NER_MODEL: \S+ has no person label"),
    ],
)
def test_bad_models_are_one_line_errors(tmp_path: Path, case: str, message: str) -> None:
    source = {
        "missing": str(tmp_path / "absent"),
        "hub": "some-org/some-ner-model",
        "empty": str(tmp_path),
    }.get(case)
    if case == "sequence":
        source = str(_build(tmp_path / "seq", arch="sequence"))
    elif case == "no_person":
        source = str(_build(tmp_path / "loc", labels={0: "O", 1: "B-LOC", 2: "I-LOC"}))
    assert source is not None
    with pytest.raises(ConfigError, match=message) as err:
        ner.configure_from_settings(Settings(pii_ner_model=source))
    assert "\n" not in str(err.value)
    assert ner.current() is None


def test_person_runs_and_word_widening() -> None:
    person, begins = {1, 2}, {1}
    offs = [[0, 0], [0, 3], [3, 8], [9, 13], [14, 16], [17, 21], [0, 0]]
    # B I I O B <pad>: "Zorbulax Quen" and "Zorb"
    assert ner.person_runs([0, 1, 2, 2, 0, 1, 0], offs, person, begins) == [(0, 13), (17, 21)]
    assert ner._words("Zorbulax Quen", [(3, 6)]) == [(0, 8)]
    assert ner.union([(0, 5)], [(3, 9), (20, 24)]) == [(0, 9), (20, 24)]


def test_a_saved_config_says_what_it_is(model_dir: Path) -> None:
    cfg = json.loads((model_dir / "config.json").read_text())
    assert cfg["architectures"] == ["BertForTokenClassification"]
    assert set(cfg["id2label"].values()) == {"O", "B-PER", "I-PER"}


def test_the_cli_uses_the_model_the_environment_names(
    model_dir: Path, forced: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = tmp_path / "in.jsonl"
    logs.write_text(json.dumps({"id": "c1", "messages": [{"role": "user", "content": TEXT}]}))
    out = tmp_path / "out.jsonl"
    res = CliRunner().invoke(app, ["ingest", str(logs), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert NAME in out.read_text()  # no model named: the built-ins alone
    monkeypatch.setenv("RLSTREAM_PII_NER_MODEL", str(model_dir))
    res = CliRunner().invoke(app, ["ingest", str(logs), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert NAME not in out.read_text() and "<NAME_1>" in out.read_text()
    monkeypatch.setenv("RLSTREAM_PII_NER_MODEL", str(tmp_path / "absent"))
    res = CliRunner().invoke(app, ["ingest", str(logs), "--out", str(out)])
    assert isinstance(res.exception, ConfigError)  # rlstream's entry prints it, exit 2
    assert str(res.exception).startswith("RLSTREAM_PII_NER_MODEL: ")
