"""A supervised service's state: is its process alive, what /healthz, /readyz and /metrics
say (:mod:`rlstream.observability.health` serves them on the service's health port)."""

from __future__ import annotations

import asyncio
import os
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from rlstream.stackstatus.model import ServiceEndpoints, ServiceStatus

#: the counters summed into the services table (rlstream.observability.metrics)
_TOTALS = {
    "rlstream_messages_consumed": "consumed",
    "rlstream_messages_published": "published",
    "rlstream_messages_dead_lettered": "dead_lettered",
}


def pid_alive(pid: int | None) -> bool | None:
    if pid is None or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _get(url: str, timeout_s: float) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            return int(r.status), r.read(1 << 20).decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return int(e.code), e.read(4096).decode("utf-8", "replace")


def parse_totals(text: str) -> dict[str, float]:
    """consumed / published / dead_lettered: each counter summed over its labels."""
    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        key = _TOTALS.get(fam.name)
        if key is None:
            continue
        out[key] = sum(s.value for s in fam.samples if s.name.endswith("_total"))
    return out


async def probe_service(name: str, ep: ServiceEndpoints, timeout_s: float = 2.0) -> ServiceStatus:
    """Never raises: what could not be asked is in ``reason``."""
    alive = pid_alive(ep.pid)
    base = (ep.health_url or "").rstrip("/")
    if not base.startswith(("http://", "https://")):
        return ServiceStatus(name=name, pid=ep.pid, alive=alive, reason="no health URL")
    if alive is False:
        return ServiceStatus(name=name, pid=ep.pid, alive=False, reason="process exited")
    try:
        live, ready = await asyncio.gather(
            asyncio.to_thread(_get, base + "/healthz", timeout_s),
            asyncio.to_thread(_get, base + "/readyz", timeout_s),
        )
    except Exception as exc:  # refused, timed out, a half-sent answer: all "cannot ask"
        why = getattr(exc, "reason", None) or exc
        return ServiceStatus(
            name=name, pid=ep.pid, alive=alive, reason=f"health endpoint: {why}"[:200]
        )
    reason = None
    if live[0] != 200:
        reason = live[1].strip()[:200] or f"HTTP {live[0]}"
    elif ready[0] != 200:
        reason = ready[1].strip()[:200] or f"HTTP {ready[0]}"
    totals: dict[str, float] = {}
    if ep.metrics_url:
        try:
            code, text = await asyncio.to_thread(_get, ep.metrics_url, timeout_s)
            if code == 200:
                totals = parse_totals(text)
        except Exception:
            pass  # readiness is what matters; the totals stay blank
    return ServiceStatus(
        name=name,
        pid=ep.pid,
        alive=alive,
        healthy=live[0] == 200,
        ready=ready[0] == 200,
        reason=reason,
        **totals,
    )
