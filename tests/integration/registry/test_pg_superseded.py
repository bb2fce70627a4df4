"""A promotion whose deploy failed (a corrupt adapter) stays committed and unannounced; once a
rollback supersedes it, it is never deployed (installing it would serve a model that is no
longer champion) and no longer blocks the outbox. On the harness's PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from registry_helpers import RecordingSink, fake_adapter

from rlstream.registry import Registry
from rlstream.registry.errors import DeployError
from rlstream.storage import Store

pytestmark = pytest.mark.postgres


class FailsFor:
    """A deploy target that refuses one model, as a server refuses a corrupt adapter."""

    name = "serve"

    def __init__(self) -> None:
        self.bad: str | None = None
        self.calls: list[tuple[str, bool]] = []

    def ref(self) -> str | None:
        return "http://127.0.0.1:1"

    async def deploy(
        self, *, agent: str, model_id: str, model_path: str | None, promotion_id: str
    ) -> None:
        self.calls.append((model_id, model_id != self.bad))
        if model_id == self.bad:
            raise DeployError(f"did not swap to {model_id[:12]} (422): corrupt")


async def test_a_superseded_failed_promotion_is_never_deployed(
    store: Store, sink: RecordingSink, tmp_path: Path
) -> None:
    target = FailsFor()
    reg = Registry(store, target=target, sink=sink)
    a = (await reg.register(fake_adapter(tmp_path, "a"), agent="bot")).model_id
    b = (await reg.register(fake_adapter(tmp_path, "b"), agent="bot")).model_id
    await reg.promote(a, agent="bot", override=True)
    target.bad = b
    with pytest.raises(DeployError, match="corrupt"):
        await reg.promote(b, agent="bot", override=True)
    assert await store.get_alias("bot", "champion") == b  # committed
    (pending,) = await store.unannounced_promotions()
    with pytest.raises(DeployError):  # a retry cannot fix it
        await reg.announce_pending()

    back = await reg.rollback("bot")
    assert back.model_id == a and back.announced_at is not None
    assert await reg.announce_pending() == []  # the failed one is superseded: skipped
    assert await store.unannounced_promotions() == []
    target.bad = None
    assert await reg.announce(pending) is None  # superseded: deploys nothing, even now
    again = await reg.promote(b, agent="bot", override=True)  # promoting b again is new
    assert again.promotion_id != pending.promotion_id and again.announced_at is not None
    assert target.calls == [(a, True), (b, False), (b, False), (a, True), (b, True)]
    assert [(e.kind, e.model_id) for e in sink.deployments()] == [
        ("promote", a), ("rollback", a), ("promote", b),
    ]  # fmt: skip
