"""A real single-node Kubernetes cluster for the `cluster` tier.

Control plane on the host (etcd, kube-apiserver, kube-controller-manager, kube-scheduler);
the node (containerd + CNI bridge, kubelet, kube-proxy) in a network namespace this harness
creates, joined to the host by a veth pair. Pods route to the host end of the veth, where the
API server and a Kafka broker for the pods listen. What the recipe gets right: cgroupfs,
oomScoreAdj 0, restrict_oom_score_adj, `nsenter --net` rather than `ip netns exec`, the sysctls
kubelet changes, pods deleted first.

Why a persistent containerd root: the images (the CPU trainer image is ~6 GB) are imported
once per content hash and reused by later sessions, which keeps a warm start well under 2 min.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import shutil
import subprocess
import time
from pathlib import Path
from typing import IO, Any

from .kube import KubeServer
from .paths import REPO_ROOT, cache_bin, cache_dir
from .procs import ManagedProcess, ServerStartError, free_port, log_tail, run_checked

NODE_NAME = "rlstream-node"
CGROUP_V1 = Path("/sys/fs/cgroup")
# Host paths kubelet and containerd 1.6 create whatever their config says: removed at
# teardown when this cluster created them and they hold no files any more.
HOST_DIRS = ("/var/lib/kubelet", "/var/lib/cni", "/run/containerd", "/var/log/containers")
# Global (not per-netns) sysctls kubelet changes: restored at teardown.
KUBELET_SYSCTLS = ("vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops")
NODE_BINS = ("kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy")
#: the images.env keys pods run (BASE_IMAGE is only a build base)
POD_IMAGES = ("PAUSE_IMAGE", "RLSTREAM_IMAGE", "TRAINER_IMAGE")
SYSTEM_BINS = ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "ip", "nsenter", "iptables")


def images_env() -> dict[str, str]:
    """Image refs written by tools/harness/ensure-images.sh ({} when never built)."""
    f = cache_dir() / "images" / "images.env"
    if not f.exists():
        return {}
    pairs = (line.split("=", 1) for line in f.read_text().splitlines() if "=" in line)
    return {k: v for k, v in pairs if v}


def missing_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespace, containerd, kubelet)"
    for b in ("etcd", "kube-apiserver", *NODE_BINS):
        if not cache_bin(b).exists():
            return f"no {b} in {cache_bin(b).parent}: run tools/harness/ensure-node.sh"
    for b in SYSTEM_BINS:
        if shutil.which(b) is None:
            return f"no `{b}` on PATH: apt-get install containerd runc iptables iproute2"
    if not Path("/usr/lib/cni/bridge").exists():
        return "no CNI plugins in /usr/lib/cni: apt-get install containernetworking-plugins"
    env = images_env()
    for k in ("PAUSE_IMAGE", "RLSTREAM_IMAGE"):
        if k not in env:
            return f"no {k}: run tools/harness/ensure-images.sh"
    return None


def full_ref(image: str) -> str:
    """containerd's normalised name of a docker image reference."""
    name = image if "/" in image.split(":")[0] else f"library/{image}"
    return name if name.split("/")[0].count(".") else f"docker.io/{name}"


class KubeCluster:
    """Start/stop the whole cluster. Attributes for tests: ``kube`` (the KubeServer, admin
    kubeconfig), ``host_ip`` (where pods reach the host), ``images`` (images.env),
    ``ready_s``, ``node_ready_s``."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.octet = self._pick_octet()
        self.host_ip = f"10.213.{self.octet}.1"
        self.node_ip = f"10.213.{self.octet}.2"
        self.pod_cidr = f"10.214.{self.octet}.0/24"
        self.service_cidr = f"10.215.{self.octet}.0/24"
        self.netns = f"rlstream-{os.getpid()}"
        self.veth_host = f"rlsh{self.octet}"
        self.veth_node = f"rlsn{self.octet}"
        self.images = images_env()
        self.kube: KubeServer  # made in start(), once host_ip exists to bind to
        self.log_path = workdir / "node.log"
        self.ready_s = 0.0
        self.node_ready_s = 0.0
        self.import_s = 0.0
        self._procs: list[ManagedProcess] = []
        self._sysctls: dict[str, str] = {}
        self.cgroup_root = f"/{self.netns}"
        self._cgroups: list[Path] = []
        self._new_host_dirs: list[Path] = []
        self._lock: IO[str] | None = None
        self._net_up = False
        self.containerd_sock = workdir / "containerd" / "containerd.sock"
        # Persistent across sessions: images imported once per content hash.
        self.containerd_root = cache_dir() / "node" / "containerd"

    @staticmethod
    def _pick_octet() -> int:
        used = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
        routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
        for _ in range(100):
            n = random.randint(2, 250)
            if f"10.213.{n}." not in used + routes and f"10.214.{n}." not in routes:
                return n
        raise ServerStartError("no free 10.213.N.0/24 subnet for the test node")

    # -- helpers ---------------------------------------------------------------------
    def _run(self, *argv: str, timeout: float = 120) -> None:
        run_checked(list(argv), self.log_path, timeout=timeout)

    def _in_ns(self, *argv: str) -> list[str]:
        # nsenter --net, not `ip netns exec`: the latter remounts /sys and hides the cgroups.
        return ["nsenter", f"--net=/run/netns/{self.netns}", "--", *argv]

    def _ctr(self, *args: str) -> list[str]:
        return ["ctr", "--address", str(self.containerd_sock), "-n", "k8s.io", *args]

    def _proc(self, name: str, argv: list[str], *, netns: bool) -> ManagedProcess:
        p = ManagedProcess(
            name, self._in_ns(*argv) if netns else argv, self.workdir / f"{name}.log"
        )
        self._procs.append(p)
        p.start()
        return p

    # -- start -----------------------------------------------------------------------
    def start(self, deadline_s: float = 240.0) -> None:
        t0 = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        lock_path = cache_dir() / "locks" / "cluster-node.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        # One node per cache at a time: the containerd root is shared.
        self._lock = open(lock_path, "w")  # noqa: SIM115 - held until stop()
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        self._save_sysctls()
        self._new_host_dirs = [Path(p) for p in HOST_DIRS if not Path(p).exists()]
        self._make_cgroup_root()
        self._network()
        self.kube = KubeServer(
            self.workdir / "control", host=self.host_ip, service_cidr=self.service_cidr,
            with_controllers=True,
        )  # fmt: skip
        self.kube.start()
        self._containerd()
        self.load_images("PAUSE_IMAGE", "RLSTREAM_IMAGE")
        self._controllers()
        self._kubelet()
        self._kube_proxy()
        self._wait_node_ready(deadline_s)
        self.ready_s = time.monotonic() - t0

    def _save_sysctls(self) -> None:
        for k in KUBELET_SYSCTLS:
            self._sysctls[k] = Path("/proc/sys", k).read_text().strip()

    def _make_cgroup_root(self) -> None:
        """kubelet's own cgroup root in every v1 hierarchy (it refuses a missing one): pods
        of concurrent test clusters never share `kubepods`, and teardown removes it all."""
        for ctrl in CGROUP_V1.iterdir():
            if not (ctrl / "cgroup.procs").exists() or ctrl.name == "unified":
                continue
            d = ctrl / self.cgroup_root.lstrip("/")
            d.mkdir(exist_ok=True)
            self._cgroups.append(d)
            if ctrl.name == "cpuset":  # a cpuset cgroup takes no task until these are set
                for f in ("cpuset.cpus", "cpuset.mems"):
                    (d / f).write_text((ctrl / f).read_text())
        # On a hybrid host runc also mirrors pod cgroups into the v2 hierarchy.
        self._cgroups.append(CGROUP_V1 / "unified" / self.cgroup_root.lstrip("/"))

    def _remove_cgroups(self) -> None:
        for top in self._cgroups:
            if top.exists():
                for sub in sorted((p for p in top.rglob("*") if p.is_dir()), reverse=True):
                    with contextlib.suppress(OSError):
                        sub.rmdir()
                with contextlib.suppress(OSError):
                    top.rmdir()
        self._cgroups = []

    def _remove_host_dirs(self) -> None:
        for d in self._new_host_dirs:
            # Only directories and sockets left (kubelet's device-plugin socket): ours.
            if d.is_dir() and all(p.is_dir() or p.is_socket() for p in d.rglob("*")):
                shutil.rmtree(d, ignore_errors=True)
        self._new_host_dirs = []

    def _network(self) -> None:
        ns, vh, vn = self.netns, self.veth_host, self.veth_node
        self._run("ip", "netns", "add", ns)
        self._net_up = True
        self._run("ip", "link", "add", vh, "type", "veth", "peer", "name", vn)
        self._run("ip", "link", "set", vn, "netns", ns)
        self._run("ip", "addr", "add", f"{self.host_ip}/24", "dev", vh)
        self._run("ip", "link", "set", vh, "up")
        self._run(*self._in_ns("ip", "link", "set", "lo", "up"))
        self._run(*self._in_ns("ip", "addr", "add", f"{self.node_ip}/24", "dev", vn))
        self._run(*self._in_ns("ip", "link", "set", vn, "up"))
        self._run(*self._in_ns("ip", "route", "add", "default", "via", self.host_ip))
        # The host answers pods directly (no NAT): route the pod subnet into the namespace.
        self._run("ip", "route", "add", self.pod_cidr, "via", self.node_ip)
        for k, v in (("net/ipv4/ip_forward", "1"), ("net/bridge/bridge-nf-call-iptables", "1")):
            with contextlib.suppress(ServerStartError):
                self._run(*self._in_ns("sh", "-c", f"echo {v} > /proc/sys/{k}"))

    def _containerd(self) -> None:
        d = self.workdir / "containerd"
        (d / "state").mkdir(parents=True, exist_ok=True)
        self.containerd_root.mkdir(parents=True, exist_ok=True)
        cni_conf = self.workdir / "cni" / "net.d"
        cni_conf.mkdir(parents=True, exist_ok=True)
        conflist = {
            "cniVersion": "0.4.0",
            "name": "rlstream",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": "cni0",
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": self.pod_cidr}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(self.workdir / "cni" / "ipam"),
                    },
                }
            ],
        }
        (cni_conf / "10-rlstream.conflist").write_text(json.dumps(conflist))
        pause = full_ref(self.images["PAUSE_IMAGE"])
        cfg = f"""version = 2
root = "{self.containerd_root}"
state = "{d / "state"}"
[grpc]
  address = "{self.containerd_sock}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{cni_conf}"
"""
        (d / "config.toml").write_text(cfg)
        p = self._proc("containerd", ["containerd", "--config", str(d / "config.toml")], netns=True)
        p.wait_ready(lambda: self._ctr_ok(), 60)

    def _ctr_ok(self) -> bool:
        r = subprocess.run(self._ctr("version"), capture_output=True, timeout=10)
        return r.returncode == 0

    def _image_refs(self) -> list[tuple[str, str]]:
        """(name, target digest) of every image in the node's containerd."""
        out = subprocess.run(
            self._ctr("images", "ls"), capture_output=True, text=True, timeout=60
        ).stdout.splitlines()[1:]
        return [(p[0], p[2]) for line in out if len(p := line.split()) >= 3]

    def _prune_images(self) -> None:
        """Remove the superseded images of every harness repository whose current image is
        already in containerd (until then the old one's layers, torch's 6 GB among them,
        make the next import cheap), with every other name of those images: the CRI plugin
        adds the image id (``sha256:<config>``) and ``repo@sha256:...`` names, which alone
        keep an old trainer image alive. ID-only names (tags removed in earlier sessions)
        go once every current image is in. containerd then collects what no image uses
        (``--sync``), so the persistent root holds the current set and at most one older
        version of an image not yet imported, however many commits a machine has tested.
        """
        refs = self._image_refs()
        current = {full_ref(i) for i in self.images.values() if i}
        present = {r for r, _ in refs if r in current}
        repos = {r.rsplit(":", 1)[0] for r in present}
        keep = {d for r, d in refs if r in current}
        tagged = {d for r, d in refs if not r.startswith("sha256:")}
        stale = {
            d for r, d in refs if "@" not in r and r.rsplit(":", 1)[0] in repos and r not in current
        }
        pods = {full_ref(self.images[k]) for k in POD_IMAGES if self.images.get(k)}
        if pods <= present:
            stale |= {d for r, d in refs if r.startswith("sha256:") and d not in tagged}
        drop = [r for r, d in refs if d in stale - keep]
        if drop:
            subprocess.run(
                self._ctr("images", "rm", "--sync", *drop), capture_output=True, timeout=600
            )

    def load_images(self, *keys: str) -> None:
        """Make images.env's ``keys`` (e.g. TRAINER_IMAGE, ~6 GB: only tests that run it)
        available to pods: docker save | ctr import, only when containerd lacks the tag."""
        t0 = time.monotonic()
        have = {r for r, _ in self._image_refs()}
        todo = [self.images[k] for k in keys if full_ref(self.images[k]) not in have]
        if not todo:
            self._prune_images()
            return
        from .docker import DockerEngine

        with DockerEngine(cache_dir()) as engine:
            for image in todo:
                with open(self.log_path, "ab") as log:
                    save = subprocess.Popen(
                        ["docker", "save", image], stdout=subprocess.PIPE, stderr=log,
                        env=engine.env,
                    )  # fmt: skip
                    imp = subprocess.run(
                        self._ctr("images", "import", "--no-unpack", "-"), stdin=save.stdout,
                        stdout=log, stderr=log, timeout=1800,
                    )  # fmt: skip
                    assert save.stdout is not None
                    save.stdout.close()
                    if save.wait() != 0 or imp.returncode != 0:
                        raise ServerStartError(
                            f"importing {image} into containerd failed:\n{log_tail(self.log_path)}"
                        )
        self._prune_images()  # after the import: layers the new image shares stay
        self.import_s += time.monotonic() - t0

    def _controllers(self) -> None:
        k = self.kube
        ca = k.workdir / "certs" / "apiserver.crt"
        self._proc(
            "kube-controller-manager",
            [
                str(cache_bin("kube-controller-manager")),
                "--kubeconfig", str(k.kubeconfig), "--leader-elect=false",
                "--bind-address", "127.0.0.1", "--secure-port", str(free_port()),
                "--root-ca-file", str(ca),
                "--service-account-private-key-file", str(k.workdir / "sa.key"),
                "--use-service-account-credentials=false",
                "--service-cluster-ip-range", self.service_cidr,
                "--concurrent-gc-syncs", "5", "--v", "1",
            ],
            netns=False,
        )  # fmt: skip
        self._proc(
            "kube-scheduler",
            [
                str(cache_bin("kube-scheduler")),
                "--kubeconfig", str(k.kubeconfig), "--leader-elect=false",
                "--bind-address", "127.0.0.1", "--secure-port", str(free_port()), "--v", "1",
            ],
            netns=False,
        )  # fmt: skip

    def _kubelet(self) -> None:
        d = self.workdir / "kubelet"
        d.mkdir(parents=True, exist_ok=True)
        cfg = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            # Reachable only from the host and the node's namespace; the API server fetches
            # logs through it without a client certificate.
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": self.cgroup_root,
            "failCgroupV1": False,
            "oomScoreAdj": 0,  # runc can't set -998 without CAP_SYS_RESOURCE
            "containerRuntimeEndpoint": f"unix://{self.containerd_sock}",
            "address": self.node_ip,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": 10248,
            "clusterDomain": "cluster.local",
            "failSwapOn": False,
            "resolvConf": "",
            "serializeImagePulls": False,
            "maxPods": 40,
            "podLogsDir": str(d / "pod-logs"),
            "volumePluginDir": str(d / "volume-plugins"),
            # A busy shared disk must not evict pods nor garbage-collect the imported images
            # (there is no registry to pull them back from). Absolute floors, not percentages:
            # 1% of a 252 GB disk is 2.5 GB, crossed while a 7 GB trainer image was imported
            # next to other work, and the eviction manager then deleted every unused image,
            # the pause image and the current services image included.
            "evictionHard": {
                "memory.available": "50Mi",
                "nodefs.available": "100Mi",
                "imagefs.available": "100Mi",
                "nodefs.inodesFree": "1%",
            },
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "nodeStatusReportFrequency": "10s",
            "syncFrequency": "10s",
        }
        (d / "config.yaml").write_text(json.dumps(cfg))
        self._proc(
            "kubelet",
            [
                str(cache_bin("kubelet")),
                "--config", str(d / "config.yaml"), "--kubeconfig", str(self.kube.kubeconfig),
                "--root-dir", str(d / "root"), "--cert-dir", str(d / "pki"),
                "--hostname-override", NODE_NAME, "--node-ip", self.node_ip, "--v", "1",
            ],
            netns=True,
        )  # fmt: skip

    def _kube_proxy(self) -> None:
        d = self.workdir / "kube-proxy"
        d.mkdir(parents=True, exist_ok=True)
        cfg = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(self.kube.kubeconfig)},
            "mode": "iptables",
            "clusterCIDR": self.pod_cidr,
            "hostnameOverride": NODE_NAME,
            "bindAddress": self.node_ip,
            "healthzBindAddress": "127.0.0.1:10256",
            "metricsBindAddress": "127.0.0.1:10249",
            # Don't touch the host's conntrack sysctls; SNAT service traffic so replies
            # between pods on one bridge come back through the NAT.
            "conntrack": {"maxPerCore": 0},
            "iptables": {"masqueradeAll": True},
        }
        (d / "config.yaml").write_text(json.dumps(cfg))
        self._proc(
            "kube-proxy",
            [str(cache_bin("kube-proxy")), "--config", str(d / "config.yaml"), "--v", "1"],
            netns=True,
        )

    def _node_ready(self) -> bool:
        code, body = self.kube.get(f"/api/v1/nodes/{NODE_NAME}")
        if code != 200:
            return False
        conds = json.loads(body)["status"].get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)

    def _wait_node_ready(self, deadline_s: float) -> None:
        t0 = time.monotonic()
        kubelet = next(p for p in self._procs if p.name == "kubelet")
        kubelet.wait_ready(self._node_ready, deadline_s)
        # Pods need the default ServiceAccount (controller-manager creates it per namespace).
        kubelet.wait_ready(
            lambda: self.kube.get("/api/v1/namespaces/default/serviceaccounts/default")[0] == 200,
            60,
        )
        self.node_ready_s = time.monotonic() - t0

    def log_paths(self) -> list[Path]:
        """Every component's log, for the failure dump."""
        kube = getattr(self, "kube", None)
        head = [kube.log_path, kube.etcd_log_path] if kube is not None else []
        return [*head, self.log_path, *(p.log_path for p in self._procs)]

    # -- stop ------------------------------------------------------------------------
    def stop(self) -> None:
        try:
            self._delete_pods()
        finally:
            self._stop_all()

    def _api_json(self, method: str, path: str) -> Any:
        import ssl
        import urllib.request

        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        req = urllib.request.Request(
            self.kube.server + path, method=method,
            headers={"Authorization": f"Bearer {self.kube.token}"},
        )  # fmt: skip
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return json.loads(r.read())

    def _delete_pods(self) -> None:
        """Stopping kubelet does not stop pods: delete them while kubelet still runs."""
        if not any(p.name == "kubelet" and p.alive() for p in self._procs):
            return
        with contextlib.suppress(Exception):
            for ns in self._api_json("GET", "/api/v1/namespaces")["items"]:
                name = ns["metadata"]["name"]
                if name.startswith("kube-"):
                    continue
                self._api_json("DELETE", f"/apis/batch/v1/namespaces/{name}/jobs")
                self._api_json("DELETE", f"/apis/apps/v1/namespaces/{name}/deployments")
                self._api_json("DELETE", f"/apis/apps/v1/namespaces/{name}/replicasets")
                self._api_json("DELETE", f"/api/v1/namespaces/{name}/pods?gracePeriodSeconds=0")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            r = subprocess.run(
                self._ctr("containers", "ls", "-q"), capture_output=True, text=True, timeout=30
            )
            if r.returncode != 0 or not r.stdout.split():
                return
            time.sleep(1)

    def _stop_all(self) -> None:
        by_name = {p.name: p for p in self._procs}
        for name in ("kube-proxy", "kubelet", "kube-scheduler", "kube-controller-manager"):
            if name in by_name:
                by_name[name].stop()
        self._kill_leftover_containers()
        if "containerd" in by_name:
            by_name["containerd"].stop()
        self._kill_shims()
        if getattr(self, "kube", None) is not None:
            self.kube.stop()
        self._unmount_under(self.workdir)
        self._remove_cgroups()
        self._remove_host_dirs()
        self._teardown_network()
        for k, v in self._sysctls.items():
            with contextlib.suppress(OSError):
                Path("/proc/sys", k).write_text(v)
        self._procs = []
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _kill_leftover_containers(self) -> None:
        if not self.containerd_sock.exists():
            return
        with contextlib.suppress(Exception):
            tasks = subprocess.run(
                self._ctr("tasks", "ls", "-q"), capture_output=True, text=True, timeout=30
            ).stdout.split()
            for t in tasks:
                subprocess.run(self._ctr("tasks", "kill", "-s", "SIGKILL", t), timeout=30)
            time.sleep(1)
            for t in tasks:
                subprocess.run(self._ctr("tasks", "rm", "-f", t), timeout=30, capture_output=True)
            ids = subprocess.run(
                self._ctr("containers", "ls", "-q"), capture_output=True, text=True, timeout=30
            ).stdout.split()
            if ids:
                subprocess.run(self._ctr("containers", "rm", *ids), timeout=60, capture_output=True)

    def _kill_shims(self) -> None:
        """containerd's shims outlive it by design: end the ones bound to this socket."""
        sock = str(self.containerd_sock).encode()
        for pid_dir in Path("/proc").iterdir():
            if not pid_dir.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                cmd = (pid_dir / "cmdline").read_bytes()
                if b"containerd-shim" in cmd and sock in cmd:
                    os.kill(int(pid_dir.name), 9)

    @staticmethod
    def _unmount_under(root: Path) -> None:
        prefix = str(root.resolve()) + "/"
        with contextlib.suppress(OSError):
            mounts = [ln.split()[1] for ln in Path("/proc/mounts").read_text().splitlines()]
            for m in sorted((m for m in mounts if m.startswith(prefix)), key=len, reverse=True):
                subprocess.run(["umount", "-l", m], capture_output=True, timeout=30)

    def _teardown_network(self) -> None:
        if not self._net_up:
            return
        subprocess.run(["ip", "route", "del", self.pod_cidr], capture_output=True, timeout=30)
        subprocess.run(["ip", "link", "del", self.veth_host], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", self.netns], capture_output=True, timeout=30)
        self._net_up = False


def repo_chart() -> Path:
    return REPO_ROOT / "charts" / "rlstream"
