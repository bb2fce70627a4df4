"""The harness's own rules: tier skips say how to enable, and CI=true turns skips into failures."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.unit, pytest.mark.harness]
TESTKIT_DIR = Path(__file__).resolve().parents[3] / "tools" / "testkit"

HELM_TEST = """
def test_needs_helm(helm_bin):
    assert helm_bin.exists()
"""


@pytest.fixture
def inner(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(TESTKIT_DIR))
    monkeypatch.setenv("RLSTREAM_CACHE_DIR", str(tmp_path / "empty-cache"))  # no binaries
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("RLSTREAM_REQUIRE_ALL_TIERS", raising=False)
    pytester.makeini("[pytest]\nmarkers =\n    gpu: gpu\n    helm: helm\n    harness: harness\n")
    return pytester


def _run(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    return p.runpytest_subprocess("-p", "rlstream_testkit.plugin", "-rs", *args, timeout=120)


def test_missing_tier_skips_locally_with_hint(inner: pytest.Pytester) -> None:
    inner.makepyfile(HELM_TEST)
    res = _run(inner)
    res.assert_outcomes(skipped=1)
    res.stdout.fnmatch_lines(["*helm tier unavailable*ensure-all.sh*"])


def test_missing_tier_fails_in_ci(inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    inner.makepyfile(HELM_TEST)
    res = _run(inner)
    res.assert_outcomes(errors=1)
    assert res.ret != 0
    res.stdout.fnmatch_lines(["*helm tier unavailable*CI=true*requires every tier*"])


def test_any_skip_fails_ci(inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLSTREAM_REQUIRE_ALL_TIERS", "1")
    inner.makepyfile(
        "import pytest\ndef test_ok(): pass\ndef test_skipped(): pytest.skip('not today')\n"
    )
    res = _run(inner)
    assert res.ret != 0
    res.stdout.fnmatch_lines(["*CI FAILURE*1 test(s) skipped*", "*test_skipped*not today*"])


def test_module_level_skip_fails_ci(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    inner.makepyfile(
        test_a="def test_ok(): pass\n",
        test_b="import pytest\npytest.importorskip('no_such_module_xyz')\ndef test_x(): pass\n",
    )
    res = _run(inner)
    assert res.ret != 0
    res.stdout.fnmatch_lines(["*CI FAILURE*1 test(s) skipped*", "*test_b.py*(whole module)*"])


def test_gpu_skip_is_the_documented_exception(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("RLSTREAM_NO_GPU", "1")
    inner.makepyfile(
        "import pytest\n"
        "def test_ok(): pass\n"
        "@pytest.mark.gpu\n"
        "def test_cuda(): raise AssertionError('must not run without a GPU')\n"
    )
    res = _run(inner)
    res.assert_outcomes(passed=1, skipped=1)
    assert res.ret == 0
    res.stdout.fnmatch_lines(["*1 gpu test(s) skipped*no GPU*"])


def test_a_skipped_harness_test_fails_ci(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `harness` only labels the tier: unlike `gpu`, it is no exception to the no-skip rule.
    monkeypatch.setenv("CI", "true")
    inner.makepyfile(
        "import pytest\n"
        "def test_ok(): pass\n"
        "@pytest.mark.harness\n"
        "def test_broker(): pytest.skip('no broker')\n"
    )
    res = _run(inner)
    assert res.ret != 0
    res.stdout.fnmatch_lines(["*CI FAILURE*1 test(s) skipped*", "*test_broker*no broker*"])


def test_zero_tests_fails_ci(inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    inner.makepyfile("def helper(): pass\n")
    res = _run(inner)
    assert res.ret != 0
    res.stdout.fnmatch_lines(["*CI FAILURE*no test ran*"])


@pytest.mark.redis
def test_failure_dumps_server_log_and_stops_server(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(TESTKIT_DIR))
    pytester.makeini("[pytest]\nmarkers =\n    redis: redis\n")
    pytester.makepyfile(
        "import pathlib\n"
        "def test_boom(redis_url):\n"
        "    pathlib.Path('url.txt').write_text(redis_url)\n"
        "    assert False, 'boom'\n"
    )
    res = _run(pytester)
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(
        ["*redis log tail*", "*Ready to accept connections*", "*server logs kept in*"]
    )
    # Teardown really stopped the server: its port no longer accepts connections.
    port = int((pytester.path / "url.txt").read_text().rsplit(":", 1)[1].split("/")[0])
    import socket

    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def test_late_builds_run_their_tests_last_and_wait_for_the_build_once(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """.ci/run's RLSTREAM_LATE_BUILDS=1: a skaffold test written first runs after the plain
    ones, and its ensure script (here a stand-in that "builds" the binary) runs once, before
    the tier is checked, so the tier is not missing."""
    harness = tmp_path / "harness"
    harness.mkdir()
    script = harness / "ensure-skaffold.sh"
    script.write_text(
        '#!/bin/sh\nmkdir -p "$RLSTREAM_CACHE_DIR/bin"\n'
        'touch "$RLSTREAM_CACHE_DIR/bin/skaffold"\necho run >> "$RLSTREAM_CACHE_DIR/ran"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("RLSTREAM_HARNESS_DIR", str(harness))
    monkeypatch.setenv("RLSTREAM_LATE_BUILDS", "1")
    monkeypatch.setenv("CI", "true")
    inner.makepyfile(
        "def test_late_a(skaffold_bin): assert skaffold_bin.exists()\n"
        "def test_plain(): pass\n"
        "def test_late_b(skaffold_bin): pass\n"
    )
    res = _run(inner, "-v")
    res.assert_outcomes(passed=3)
    res.stdout.fnmatch_lines(
        ["*test_plain PASSED*", "*test_late_a PASSED*", "*test_late_b PASSED*"]
    )
    assert (tmp_path / "empty-cache" / "ran").read_text() == "run\n"


def test_ci_run_step_returns_the_failed_commands_status(tmp_path: Path) -> None:
    """.ci/run's `step NAME CMD` is called as `step "make test" make test || rc=$?`: inside a
    function called under `||`, set -e does not apply, so a failing test run once read as
    success (the cold run of 2026-12-01 exited 0 with a failed test)."""
    ci_run = (Path(__file__).resolve().parents[3] / ".ci" / "run").read_text()
    start = ci_run.index("step() {")
    step_fn = ci_run[start : ci_run.index("\n}\n", start) + 3]
    script = (
        "set -euo pipefail\n" + step_fn + 'rc=0\nstep "fails" bash -c "exit 3" || rc=$?\n'
        'step "passes" true\necho "rc=$rc"\nstep "stops the script" false\necho reached\n'
    )
    res = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
    assert "rc=3" in res.stdout
    assert "reached" not in res.stdout and res.returncode == 1
