"""Unknown RLSTREAM_* variables are refused at start with the closest valid name; a
variable that any rlstream process reads is accepted by every one (one ConfigMap)."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rlstream.errors import ConfigError
from rlstream.settings import Settings, startup_settings
from rlstream.settings_check import (
    DIRECT_ENV,
    SUBCLASS_FIELDS,
    check_environment,
    known_names,
    unknown_settings,
)

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
SOURCES = (ROOT / "shared" / "rlstream", ROOT / "services" / "rlstream" / "services")


def _settings_modules() -> list[str]:
    """Every module that defines a class deriving from a ``...Settings`` class."""
    out = []
    for top in SOURCES:
        for path in sorted(top.rglob("*.py")):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and any(
                    ast.unparse(b).endswith("Settings") for b in node.bases
                ):
                    base = ROOT / top.relative_to(ROOT).parts[0]  # holds rlstream/
                    rel = path.relative_to(base).with_suffix("")
                    out.append(".".join(rel.parts).removesuffix(".__init__"))
                    break
    return out


def _all_subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub, *_all_subclasses(sub)}
    return out


def test_the_subclass_field_list_is_exactly_the_subclasses_fields() -> None:
    modules = _settings_modules()
    assert "rlstream.services.ingest.settings" in modules  # the scan found the services
    for m in modules:
        importlib.import_module(m)
    real = {
        f
        for cls in _all_subclasses(Settings)
        if cls.__module__.startswith("rlstream.")
        for f in cls.model_fields
    } - set(Settings.model_fields)
    assert real - SUBCLASS_FIELDS == set(), "add to rlstream.settings_check.SUBCLASS_FIELDS"
    assert SUBCLASS_FIELDS - real == set(), "stale in rlstream.settings_check.SUBCLASS_FIELDS"


def test_every_directly_read_name_is_allowed() -> None:
    """A name the code reads with os.environ / getenv must not be refused at start."""
    pattern = re.compile(r"""(?:environ\.get|getenv|environ\[)\(?\s*["'](RLSTREAM_[A-Z0-9_]+)""")
    read: set[str] = set()
    for top in SOURCES:
        for path in top.rglob("*.py"):
            read |= set(pattern.findall(path.read_text()))
    assert read, "the scan found no direct read (the pattern is broken)"
    known = known_names(Settings.model_fields)
    assert read - known == set()


def test_a_typo_names_the_closest_valid_setting() -> None:
    known = known_names(Settings.model_fields)
    assert unknown_settings({"RLSTREAM_POSTGRES_DNS": "x", "PATH": "/bin"}, known) == [
        "unknown setting RLSTREAM_POSTGRES_DNS: did you mean RLSTREAM_POSTGRES_DSN?"
    ]
    assert unknown_settings({"RLSTREAM_ZZZ": "1"}, known) == [
        "unknown setting RLSTREAM_ZZZ (no setting has a similar name)"
    ]


def test_one_error_line_lists_every_unknown_name() -> None:
    env = {"RLSTREAM_REDIS_URI": "redis://x", "RLSTREAM_KAFKA_BOOTSTRAPS": "k:9092"}
    with pytest.raises(ConfigError) as err:
        check_environment(Settings.model_fields, env)
    msg = str(err.value)
    assert "\n" not in msg
    assert "RLSTREAM_KAFKA_BOOTSTRAPS: did you mean RLSTREAM_KAFKA_BOOTSTRAP?" in msg
    assert "RLSTREAM_REDIS_URI: did you mean RLSTREAM_REDIS_URL?" in msg


def test_names_of_other_classes_and_direct_reads_are_accepted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ingest's setting, the launcher's, a harness variable, a lower-case spelling:
    # every rlstream process receives the same ConfigMap, each must accept them all
    for name in (
        "RLSTREAM_ASSEMBLY_IDLE_TIMEOUT_S",
        "RLSTREAM_K8S_NAMESPACE",
        "RLSTREAM_CACHE_DIR",
        "rlstream_log_level",
    ):
        monkeypatch.setenv(name, "1")
    assert Settings().log_level == "1"
    assert set(DIRECT_ENV) <= known_names(())


def test_settings_refuse_an_unknown_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLSTREAM_POSTGRES_DNS", "postgresql://db/x")
    with pytest.raises(ConfigError, match="did you mean RLSTREAM_POSTGRES_DSN"):
        Settings()


def test_a_service_start_is_one_line_and_exit_code_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RLSTREAM_HEALTH_PORTT", "1")
    with pytest.raises(SystemExit) as exit_:
        startup_settings(Settings)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "RLSTREAM_HEALTH_PORTT: did you mean RLSTREAM_HEALTH_PORT?" in err
    monkeypatch.delenv("RLSTREAM_HEALTH_PORTT")
    monkeypatch.setenv("RLSTREAM_MAX_MESSAGE_BYTES", "lots")
    with pytest.raises(SystemExit):
        startup_settings(Settings)
    assert capsys.readouterr().err.startswith(
        "error: invalid setting RLSTREAM_MAX_MESSAGE_BYTES: Input should be a valid integer"
    )


def test_a_service_module_refuses_a_typo_with_one_line() -> None:
    """The deployable itself: importing the grader's app (what ``faststream run`` does)."""
    env = {"PATH": "/usr/bin:/bin", "RLSTREAM_KAFKA_BOOTSTRAPP": "k:9092"}
    out = subprocess.run(
        [sys.executable, "-c", "import rlstream.services.grader.app"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stderr.strip().splitlines() == [
        "error: unknown setting RLSTREAM_KAFKA_BOOTSTRAPP: did you mean "
        "RLSTREAM_KAFKA_BOOTSTRAP? (a variable no rlstream process reads is refused: a typo "
        "must not silently leave a setting at its default)"
    ]


def test_the_cli_refuses_a_typo_with_one_line() -> None:
    env = {"PATH": "/usr/bin:/bin", "RLSTREAM_POSTGRES_DNS": "postgresql://db/x"}
    out = subprocess.run(
        [sys.executable, "-m", "rlstream.services.cli.main", "db", "current"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    text = (out.stdout + out.stderr).strip()
    assert out.returncode != 0
    assert len(text.splitlines()) == 1, text
    assert "did you mean RLSTREAM_POSTGRES_DSN?" in text
