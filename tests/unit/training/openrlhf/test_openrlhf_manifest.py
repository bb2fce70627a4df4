"""The committed flag manifest is exactly what the pinned OpenRLHF release defines.

Proven two ways against the real wheel (``pip download --no-deps``, cached under
the harness cache, ``$RLSTREAM_CACHE_DIR/openrlhf``; needs PyPI, which CI has): the AST extractor
re-run on the wheel reproduces the committed JSON byte for byte, and argparse itself,
building the CLI's real parser from the wheel's source with ray/openrlhf imports stubbed,
agrees with every flag's dest, type, default, choices, nargs and action.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _helpers_openrlhf import STUBBED, StubFinder
from hypothesis import given, settings
from hypothesis import strategies as st

from rlstream.training.openrlhf import flags as flags_mod
from rlstream.training.openrlhf.extract import (
    PPO_MODULE,
    build_manifest,
    extract_flags,
    module_path,
    source_from_wheel,
)
from rlstream.training.openrlhf.pin import OPENRLHF_VERSION
from rlstream.training.openrlhf.wheel import fetch_wheel
from rlstream_testkit.paths import REPO_ROOT, cache_dir

pytestmark = pytest.mark.unit
HERE = Path(flags_mod.__file__).parent
#: flags per CLI in 0.11.2 (train_ppo_ray: 167)
COUNTS = {"train_ppo_ray": 167, "train_sft": 77, "train_dpo": 82}


def _committed(cli: str) -> str:
    return (HERE / flags_mod.manifest_file(cli)).read_text()


@pytest.fixture(scope="module")
def wheel() -> Path:
    return fetch_wheel(OPENRLHF_VERSION, cache_dir() / "openrlhf")


def test_pin_is_the_dockerfile_arg() -> None:
    text = (REPO_ROOT / "docker" / "Dockerfile.gpu").read_text()
    args = re.findall(r"^ARG OPENRLHF_VERSION=(\S+)$", text, flags=re.M)
    assert args == [OPENRLHF_VERSION]
    assert "openrlhf[vllm]==${OPENRLHF_VERSION}" in text


@pytest.mark.parametrize("cli", flags_mod.CLIS)
def test_committed_manifest_is_for_the_pin_and_counts_its_flags(cli: str) -> None:
    manifest = json.loads(_committed(cli))
    assert manifest["openrlhf_version"] == OPENRLHF_VERSION
    assert manifest["module"] == module_path(cli)
    assert manifest["flag_count"] == len(manifest["flags"]) == COUNTS[cli]
    assert module_path("train_ppo_ray") == PPO_MODULE


@pytest.mark.parametrize("cli", flags_mod.CLIS)
def test_manifest_re_extracted_from_the_real_wheel_is_the_committed_one(
    wheel: Path, cli: str
) -> None:
    assert wheel.name.startswith(f"openrlhf-{OPENRLHF_VERSION}-")
    module = module_path(cli)
    fresh = build_manifest(source_from_wheel(wheel, module), OPENRLHF_VERSION, module)
    assert json.dumps(fresh, indent=2, sort_keys=True) + "\n" == _committed(cli)


class _Captured(Exception):
    pass


@pytest.fixture(params=flags_mod.CLIS)
def real_parser(
    wheel: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """argparse's own parser, built by running the wheel's CLI source up to parse_args()."""
    finder = StubFinder()
    stubbed = [m for m in sys.modules if m.split(".")[0] in STUBBED]
    assert not stubbed, "a real ray/openrlhf is imported in this process"
    sys.meta_path.insert(0, finder)
    captured: list[argparse.ArgumentParser] = []

    def capture(self: argparse.ArgumentParser, *a: Any, **k: Any) -> Any:
        captured.append(self)
        raise _Captured

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    try:
        module = module_path(request.param)
        code = compile(source_from_wheel(wheel, module), module, "exec")
        with pytest.raises(_Captured):
            exec(code, {"__name__": "__main__"})
        yield request.param, captured[0]
    finally:
        sys.meta_path.remove(finder)
        for m in [m for m in sys.modules if m.split(".")[0] in STUBBED]:
            del sys.modules[m]


_ACTIONS = {
    argparse._StoreAction: None,
    argparse._StoreTrueAction: "store_true",
    argparse._StoreFalseAction: "store_false",
}


def _jsonish(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value


def test_argparse_itself_agrees_with_every_manifest_flag(
    real_parser: tuple[str, argparse.ArgumentParser],
) -> None:
    cli, parser = real_parser
    committed = json.loads(_committed(cli))["flags"]
    actions = {
        opt: a for a in parser._actions for opt in a.option_strings if opt not in ("-h", "--help")
    }
    assert sorted(actions) == sorted(committed)
    for flag, action in actions.items():
        spec = committed[flag]
        assert spec["dest"] == action.dest, flag
        assert spec["action"] == _ACTIONS[type(action)], flag
        assert spec["nargs"] == (action.nargs if spec["action"] is None else None), flag
        assert spec["choices"] == (list(action.choices) if action.choices else None), flag
        assert spec["type"] == (action.type.__name__ if action.type else None), flag
        if isinstance(spec["default"], dict) and "expr" in spec["default"]:
            continue  # float("inf") / a timestamp: kept as source text
        assert spec["default"] == _jsonish(action.default), flag


def test_extractor_expands_the_prefix_loop_and_keeps_non_literals() -> None:
    src = """
import argparse
if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--a.x", type=int, default=3, choices=[1, 3])
    for prefix in ("actor", "critic"):
        p.add_argument(f"--{prefix}.lr", type=float, default=1e-6 if prefix == "actor" else 9e-6)
        p.add_argument(f"--{prefix}.no_y", dest=f"{prefix}.y", action="store_false")
    p.add_argument("--m", type=float, default=float("inf"), nargs=2)
"""
    got = extract_flags(src)
    assert list(got) == [
        "--a.x",
        "--actor.lr",
        "--actor.no_y",
        "--critic.lr",
        "--critic.no_y",
        "--m",
    ]
    assert got["--actor.lr"]["default"] == 1e-6 and got["--critic.lr"]["default"] == 9e-6
    assert got["--critic.no_y"]["dest"] == "critic.y" and got["--critic.no_y"]["default"] is True
    assert got["--a.x"]["choices"] == [1, 3] and got["--a.x"]["type"] == "int"
    assert got["--m"]["default"] == {"expr": "float('inf')"} and got["--m"]["nargs"] == 2


def test_a_cached_wheel_is_not_downloaded_again(
    wheel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlstream.training.openrlhf import wheel as wheel_mod

    def no_network(*a: Any, **k: Any) -> Any:
        raise AssertionError("pip download ran although the wheel is cached")

    monkeypatch.setattr(wheel_mod.subprocess, "run", no_network)
    assert fetch_wheel(OPENRLHF_VERSION, wheel.parent) == wheel
    cmd = wheel_mod.download_command(OPENRLHF_VERSION, wheel.parent)
    assert cmd[-5:] == [
        "--platform",
        "manylinux1_x86_64",
        "openrlhf==0.11.2",
        "-d",
        str(wheel.parent),
    ]
    assert cmd[-10:-5] == ["--no-deps", "--only-binary", ":all:", "--python-version", "3.11"]


def _values(spec: dict[str, Any]) -> st.SearchStrategy[list[str]]:
    """Values for a flag: mostly well-typed, sometimes not, sometimes the wrong count."""
    typed: st.SearchStrategy[str] = {
        "int": st.integers(-(10**6), 10**6).map(str),
        "float": st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
    }.get(spec["type"] or "", st.text("abcxyz_./0123456789", min_size=1, max_size=8))
    if spec["choices"]:
        typed = st.sampled_from([str(c) for c in spec["choices"]])
    bad = st.sampled_from(["-1e5", "-3", "-.5", "nan", "x", ""])
    one = st.one_of(typed, typed, typed, typed, typed, bad)
    if spec["action"] in ("store_true", "store_false"):
        return st.one_of(st.just([]), st.just([]), st.lists(one, min_size=1, max_size=1))
    n = spec["nargs"]
    if isinstance(n, int):
        return st.lists(one, min_size=max(0, n - 1), max_size=n + 1)
    if n in ("*", "+"):
        return st.lists(one, min_size=0, max_size=3)
    return st.one_of(st.lists(one, min_size=1, max_size=1), st.lists(one, max_size=2))


@st.composite
def _argvs(draw: st.DrawFn, cli: str) -> list[str]:
    known = flags_mod.flags(cli)
    chosen = draw(st.lists(st.sampled_from(sorted(known)), min_size=1, max_size=4, unique=True))
    argv: list[str] = []
    for flag in chosen:
        cut = draw(st.sampled_from([0] * 8 + [1, 3]))  # sometimes a prefix
        spelled = flag[: len(flag) - cut]
        argv += [spelled, *draw(_values(known[flag]))]
    return argv


@pytest.mark.parametrize("cli", flags_mod.CLIS)
def test_what_our_validator_accepts_argparse_parses_to_the_same_values(
    wheel: Path, cli: str
) -> None:
    """Differential test against the release's own parser: every argv the validator accepts,
    argparse accepts too, with the same value for every flag given."""
    module = module_path(cli)
    captured: list[argparse.ArgumentParser] = []
    real_parse = argparse.ArgumentParser.parse_args

    def capture(self: argparse.ArgumentParser, *a: Any, **k: Any) -> Any:
        captured.append(self)
        raise _Captured

    finder = StubFinder()
    sys.meta_path.insert(0, finder)
    argparse.ArgumentParser.parse_args = capture  # type: ignore[method-assign]
    try:
        with pytest.raises(_Captured):
            exec(
                compile(source_from_wheel(wheel, module), module, "exec"), {"__name__": "__main__"}
            )
    finally:
        argparse.ArgumentParser.parse_args = real_parse  # type: ignore[method-assign]
        sys.meta_path.remove(finder)
        for m in [m for m in sys.modules if m.split(".")[0] in STUBBED]:
            del sys.modules[m]
    parser = captured[0]
    accepted = []

    @settings(max_examples=150, deadline=None, database=None)
    @given(argv=_argvs(cli))
    def check(argv: list[str]) -> None:
        try:
            ours = flags_mod.parse_args(argv, cli)
        except flags_mod.FlagError:
            return  # stricter than argparse (prefixes, duplicates) is fine
        accepted.append(argv)
        try:
            theirs = vars(real_parse(parser, argv))
        except SystemExit as exc:
            msg = f"validator accepted {argv} but argparse exits {exc.code}"
            raise AssertionError(msg) from None
        for dest, value in ours.items():
            got = theirs[dest]
            assert (list(got) if isinstance(got, tuple) else got) == value, (dest, argv)

    check()
    assert len(accepted) >= 10  # the property was exercised, not vacuous
