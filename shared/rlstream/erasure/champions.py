"""The registry's side of ``RLSTREAM_ERASURE_CHAMPION=rollback``: one rollback step, and
the champion a model replaced (to find the newest earlier one not trained on erased data)."""

from __future__ import annotations

from rlstream.erasure.apply import PreviousOf, Rollback
from rlstream.registry import NoPreviousChampionError, Registry


def registry_hooks(registry: Registry) -> tuple[Rollback, PreviousOf]:
    """(rollback, previous_of) over ``registry`` (its deploy target and event sink)."""

    async def rollback(agent: str, reason: str) -> str | None:
        try:
            return (await registry.rollback(agent, reason=reason)).model_id
        except NoPreviousChampionError:
            return None

    async def previous_of(agent: str, model: str) -> str | None:
        history = [p for p in await registry.store.list_promotions(agent) if p.alias == "champion"]
        installed = [p for p in history if p.kind == "promote" and p.model_id == model]
        return installed[-1].previous_model_id if installed else None

    return rollback, previous_of
