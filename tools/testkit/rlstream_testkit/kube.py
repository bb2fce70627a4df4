"""etcd + kube-apiserver (RBAC, static token auth) built by tools/harness/ensure-k8s.sh.

No controllers run: objects are stored and validated but nothing reconciles them, so tests
move a Job forward by patching its /status subresource.
"""

from __future__ import annotations

import json
import secrets
import shutil
import ssl
import time
import urllib.request
from pathlib import Path

import yaml

from .paths import cache_bin
from .procs import ManagedProcess, free_port, run_checked


def _keypair(key: Path, pub: Path, log: Path) -> None:
    """RSA key pair for service-account tokens (openssl, else the cryptography package)."""
    if shutil.which("openssl"):
        run_checked(["openssl", "genrsa", "-out", str(key), "2048"], log)
        run_checked(["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(pub)], log)
        return
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    k = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key.write_bytes(
        k.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    pub.write_bytes(
        k.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )


class KubeServer:
    """Connection info: ``server``, ``token``/``kubeconfig`` (admin, system:masters) and
    ``limited_token``/``limited_kubeconfig`` (an authenticated user with no RBAC grants)."""

    def __init__(
        self,
        workdir: Path,
        *,
        host: str = "127.0.0.1",
        service_cidr: str = "10.0.0.0/24",
        with_controllers: bool = False,
    ) -> None:
        """``with_controllers``: a real node's control plane (kube-cluster tier): the
        ServiceAccount admission and the ``kubernetes`` endpoint reconciler stay on, so pods
        get tokens and reach this server at ``host`` (an address the node can route to)."""
        self.workdir = workdir
        self.host = host
        self.service_cidr = service_cidr
        self.with_controllers = with_controllers
        self.etcd_port = free_port()
        self.etcd_peer_port = free_port()
        self.port = free_port(host)
        self.server = f"https://{host}:{self.port}"
        self.token = "admin-" + secrets.token_hex(16)
        self.limited_token = "limited-" + secrets.token_hex(16)
        self.limited_user = "rlstream-limited"
        self.kubeconfig = workdir / "admin.kubeconfig"
        self.limited_kubeconfig = workdir / "limited.kubeconfig"
        self.log_path = workdir / "kube-apiserver.log"
        self.etcd_log_path = workdir / "etcd.log"
        self.ready_s = 0.0
        self._etcd: ManagedProcess | None = None
        self._api: ManagedProcess | None = None

    def _write_kubeconfig(self, path: Path, user: str, token: str) -> None:
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "rlstream-test",
                    "cluster": {"server": self.server, "insecure-skip-tls-verify": True},
                }
            ],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [
                {
                    "name": user,
                    "context": {"cluster": "rlstream-test", "user": user, "namespace": "default"},
                }
            ],
            "current-context": user,
        }
        path.write_text(yaml.safe_dump(cfg))
        path.chmod(0o600)

    def get(self, path: str, token: str | None = None) -> tuple[int, bytes]:
        """Tiny authenticated GET, used for readiness (no client library needed)."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        req = urllib.request.Request(
            self.server + path, headers={"Authorization": f"Bearer {token or self.token}"}
        )
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=5) as resp:
                return int(resp.status), resp.read()
        except urllib.error.HTTPError as e:
            body = e.read()
            e.close()
            return int(e.code), body

    def start(self, deadline_s: float = 120.0) -> None:
        t0 = time.monotonic()
        d = self.workdir
        d.mkdir(parents=True, exist_ok=True)
        (d / "certs").mkdir(exist_ok=True)
        if not (d / "sa.key").exists():
            _keypair(d / "sa.key", d / "sa.pub", self.log_path)
        (d / "tokens.csv").write_text(
            f'{self.token},admin,admin-uid,"system:masters"\n'
            f"{self.limited_token},{self.limited_user},limited-uid\n"
        )
        self._etcd = ManagedProcess(
            "etcd",
            [
                str(cache_bin("etcd")),
                "--data-dir", str(d / "etcd"),
                "--listen-client-urls", f"http://127.0.0.1:{self.etcd_port}",
                "--advertise-client-urls", f"http://127.0.0.1:{self.etcd_port}",
                "--listen-peer-urls", f"http://127.0.0.1:{self.etcd_peer_port}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.etcd_peer_port}",
                "--initial-cluster", f"default=http://127.0.0.1:{self.etcd_peer_port}",
                "--unsafe-no-fsync", "--log-level", "warn",
            ],
            self.etcd_log_path,
        )  # fmt: skip
        self._etcd.start()
        self._etcd.wait_ready(self._etcd_healthy, 60)
        # The node's name doesn't resolve: reach kubelet (logs, exec) by its InternalIP.
        mode: list[str] = ["--kubelet-preferred-address-types", "InternalIP"]
        if not self.with_controllers:
            # No controller creates ServiceAccounts, and the `kubernetes` Endpoints can't
            # hold a loopback IP: turn both off.
            mode = ["--disable-admission-plugins", "ServiceAccount",
                    "--endpoint-reconciler-type", "none"]  # fmt: skip
        self._api = ManagedProcess(
            "kube-apiserver",
            [
                str(cache_bin("kube-apiserver")),
                "--etcd-servers", f"http://127.0.0.1:{self.etcd_port}",
                "--bind-address", self.host, "--advertise-address", self.host,
                "--secure-port", str(self.port), "--cert-dir", str(d / "certs"),
                "--service-cluster-ip-range", self.service_cidr,
                "--service-account-issuer", self.server,
                "--service-account-key-file", str(d / "sa.pub"),
                "--service-account-signing-key-file", str(d / "sa.key"),
                "--authorization-mode", "RBAC",
                "--token-auth-file", str(d / "tokens.csv"),
                "--allow-privileged=true", "--profiling=false",
                *mode,
            ],
            self.log_path,
        )  # fmt: skip
        self._api.start()
        self._api.wait_ready(lambda: self.get("/readyz")[0] == 200, deadline_s)
        # The in-process bootstrap controller creates `default` shortly after /readyz.
        self._api.wait_ready(lambda: self.get("/api/v1/namespaces/default")[0] == 200, 60)
        self._write_kubeconfig(self.kubeconfig, "admin", self.token)
        self._write_kubeconfig(self.limited_kubeconfig, self.limited_user, self.limited_token)
        self.ready_s = time.monotonic() - t0

    def _etcd_healthy(self) -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.etcd_port}/health", timeout=2) as r:
            return bool(json.loads(r.read()).get("health") == "true")

    def version(self) -> str:
        return str(json.loads(self.get("/version")[1])["gitVersion"])

    def stop(self) -> None:
        for p in (self._api, self._etcd):
            if p is not None:
                p.stop()
        self._api = self._etcd = None
