"""Each streaming service exports rlstream_build_info, and its consumer lag gauge is set
for its source topic although no batch was ever consumed (refreshed in the background)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from helpers import wait_until

from rlstream.events import topics

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.redis]

SERVICES = {
    "ingest": topics.CONVERSATIONS_RAW,
    "grader": topics.TRANSCRIPTS,
    "curator": topics.SCORED,
}


def test_services_export_build_info_and_fresh_lag_when_idle(make_stack: Any) -> None:
    st = make_stack(rlstream_broker_probe_interval_s="0.5", rlstream_git_sha="abc1234")
    procs = st.start(*SERVICES)
    for name, proc in zip(SERVICES, procs, strict=True):
        source = re.escape(st.topic(SERVICES[name]))

        def idle_lag(proc: Any = proc, source: str = source, name: str = name) -> str | None:
            _, text = proc.http("/metrics")
            pattern = rf'rlstream_consumer_lag\{{[^}}]*service="{name}"[^}}]*topic="{source}"'
            return text if re.search(pattern, text) else None

        text = wait_until(idle_lag, 60)  # nothing was ever sent: no batch set it
        assert text, f"{name}: no consumer lag series on an idle consumer"
        assert re.search(
            r'rlstream_build_info\{git_sha="abc1234",python="3\.11\.\d+",version="', text
        )
