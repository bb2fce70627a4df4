"""Tiny admin/impersonating client for the cluster tests (stdlib only: no client library
decides for us how impersonation or a 403 looks)."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from typing import Any


class Api:
    def __init__(self, server: str, token: str, impersonate: str | None = None) -> None:
        self.server = server
        self.token = token
        self.impersonate = impersonate
        self._ctx = ssl.create_default_context()
        self._ctx.check_hostname = False
        self._ctx.verify_mode = ssl.CERT_NONE

    def as_user(self, user: str) -> Api:
        """The same admin credentials, impersonating ``user`` (the Impersonate-User header)."""
        return Api(self.server, self.token, impersonate=user)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if self.impersonate:  # RBAC bindings name the ServiceAccount user itself
            headers["Impersonate-User"] = self.impersonate
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = (
                "application/merge-patch+json" if method == "PATCH" else "application/json"
            )
        req = urllib.request.Request(self.server + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, context=self._ctx, timeout=30) as r:
                raw = r.read()
                return int(r.status), _parse(raw)
        except urllib.error.HTTPError as e:
            raw = e.read()
            e.close()
            return int(e.code), _parse(raw)

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        code, out = self.call(method, path, body)
        assert 200 <= code < 300, f"{method} {path} -> {code}: {out}"
        return out

    def wait(self, fn: Any, timeout: float, what: str, every: float = 1.0) -> Any:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = fn()
            if last:
                return last
            time.sleep(every)
        raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last={last}")


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def job_done(api: Api, ns: str, name: str) -> str | None:
    """'Complete' or 'Failed' once the Job has that condition, else None."""
    job = api.ok("GET", f"/apis/batch/v1/namespaces/{ns}/jobs/{name}")
    for c in (job.get("status") or {}).get("conditions") or []:
        if c["type"] in ("Complete", "Failed") and c["status"] == "True":
            return str(c["type"])
    return None


def pod_logs(api: Api, ns: str, selector: str) -> str:
    pods = api.ok("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector={selector}")["items"]
    out = []
    for p in pods:
        code, text = api.call("GET", f"/api/v1/namespaces/{ns}/pods/{p['metadata']['name']}/log")
        out.append(f"--- {p['metadata']['name']} ({code})\n{text}")
    return "\n".join(out)
