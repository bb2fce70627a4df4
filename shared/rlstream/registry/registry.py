"""The model registry: register weights, move the champion/challenger aliases, roll back.

A promotion rests on an evaluation that decided ``promote`` and compares-and-sets the
champion that evaluation was made against (an operator's ``override`` skips both, and says
so in the promotion's reason). It is one Postgres transaction (alias + promotions row +
lineage edges, see ``Store.promote``), then an announcement: the deploy target's patch and a
``DeploymentEvent`` whose ``event_id`` is the promotion id. The promotions row carries
``announced_at`` as an outbox marker: a crash between commit and announcement leaves it
NULL and :meth:`Registry.announce_pending` (run by the evaluator at start and by every
``rlstream promote``) finishes the job with the same event id.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from rlstream.events.models import DeploymentEvent
from rlstream.registry.deploy import DeployTarget, NoneTarget
from rlstream.registry.errors import (
    ChampionMovedError,
    DeployError,
    NoPreviousChampionError,
    NotGatedError,
    UnknownModelError,
)
from rlstream.registry.ids import derived_id, model_record
from rlstream.registry.publish import EventSink, NullSink, publish_deployment
from rlstream.storage import (
    AliasMovedError,
    EvaluationRecord,
    ModelRecord,
    PromotionRecord,
    Store,
    Unchecked,
)
from rlstream.storage.records import Alias

log = logging.getLogger("rlstream.registry")

ALIASES: tuple[Alias, ...] = ("champion", "challenger")


class Registry:
    """Registry operations over a :class:`Store`, with a deploy target and an event sink."""

    def __init__(
        self,
        store: Store,
        *,
        target: DeployTarget | None = None,
        sink: EventSink | None = None,
    ) -> None:
        self.store = store
        self.target: DeployTarget = target or NoneTarget()
        self.sink: EventSink = sink or NullSink()

    # ---- models ------------------------------------------------------------------------

    async def register(
        self,
        weights_dir: Path,
        *,
        agent: str,
        run_id: str | None = None,
        dataset_sha256: str | None = None,
        evaluation_id: str | None = None,
        base_model: str | None = None,
        tags: dict[str, JsonValue] | None = None,
        model_id: str | None = None,
    ) -> ModelRecord:
        """Record the weights under their digest (idempotent), tagged with their lineage."""
        record = model_record(
            weights_dir,
            agent=agent,
            run_id=run_id,
            dataset_sha256=dataset_sha256,
            evaluation_id=evaluation_id,
            base_model=base_model,
            tags=tags,
            model_id=model_id,
        )
        await self.store.register_model(record, evaluation_id=evaluation_id)
        stored = await self.store.get_model(record.model_id)
        assert stored is not None
        return stored

    async def resolve(self, ref: str, *, agent: str | None = None) -> ModelRecord:
        """A model by id, unique id prefix (8+ chars), or alias (``champion`` with ``agent``)."""
        if ref in ALIASES:
            if agent is None:
                raise UnknownModelError(f"'{ref}' is an alias: pass --agent to say whose")
            mid = await self.store.get_alias(agent, ref)
            if mid is None:
                raise UnknownModelError(f"agent {agent!r} has no {ref}")
            ref = mid
        found = await self.store.get_model(ref)
        if found is not None:
            return found
        if len(ref) >= 8:
            ids = await self.store.find_model_ids(ref)
            if len(ids) == 1:
                model = await self.store.get_model(ids[0])
                assert model is not None
                return model
            if len(ids) > 1:
                raise UnknownModelError(f"model prefix {ref!r} is ambiguous: {', '.join(ids[:3])}…")
        raise UnknownModelError(f"unknown model {ref!r} (rlstream lineage/promote take a model id)")

    # ---- aliases -----------------------------------------------------------------------

    async def promote(
        self,
        model_id: str,
        *,
        agent: str | None = None,
        evaluation_id: str | None = None,
        promotion_id: str | None = None,
        reason: str = "manual",
        override: bool = False,
    ) -> PromotionRecord:
        """Make ``model_id`` the champion and announce it (deploy + DeploymentEvent).

        Gated unless ``override``: the model's evaluation (``evaluation_id``, else its latest)
        must have decided ``promote``, else :class:`NotGatedError`; the champion moves only
        while it is still the one that evaluation compared the model with (compare-and-set
        in the promotion's transaction), else :class:`ChampionMovedError` with the refusal
        recorded on the evaluation. ``override=True`` is an operator's explicit promotion
        without a gate, recorded with reason ``override: <reason>``.

        Without ``promotion_id`` the id is derived from the agent, model and the champion
        promotion it replaces, so a retried call finds its own row. Promoting the current
        champion changes nothing (a pending announcement is finished).
        """
        model = await self.resolve(model_id, agent=agent)
        if agent is not None and agent != model.agent:
            raise UnknownModelError(f"model {model.model_id[:12]} belongs to agent {model.agent!r}")
        last = await self.last_champion_promotion(model.agent)
        if promotion_id is None and last is not None and last.model_id == model.model_id:
            return await self._finish(last)
        expect: str | Unchecked | None = Unchecked.ANY
        if not override:
            evaluation = await self._gate(model, evaluation_id)
            evaluation_id, expect = evaluation.evaluation_id, evaluation.baseline_champion
        pid = promotion_id or derived_id(
            "promote", model.agent, model.model_id, last.promotion_id if last else None
        )
        promotion = PromotionRecord(
            promotion_id=pid,
            agent=model.agent,
            model_id=model.model_id,
            alias="champion",
            run_id=model.run_id,
            evaluation_id=evaluation_id,
            kind="promote",
            target=self.target.name,
            reason=f"override: {reason}" if override else reason,
        )
        try:
            record = await self.store.promote(promotion, expect_previous=expect)
        except AliasMovedError as exc:
            current = await self.last_champion_promotion(model.agent)
            if exc.current == model.model_id and current is not None:
                return await self._finish(current)  # already the champion: nothing to move
            raise ChampionMovedError(str(exc)) from exc
        return await self._finish(record)

    async def _gate(self, model: ModelRecord, evaluation_id: str | None) -> EvaluationRecord:
        """The evaluation a gated promotion rests on; it must have decided ``promote``."""
        if evaluation_id is not None:
            found = await self.store.get_evaluation(evaluation_id)
            evaluation = found if found and found.candidate_model == model.model_id else None
        else:
            judged = await self.store.evaluations_of_model(model.model_id)
            evaluation = judged[-1] if judged else None
        hint = "; an operator can promote it anyway with --override (recorded as such)"
        if evaluation is None:
            named = f" {evaluation_id}" if evaluation_id else ""
            raise NotGatedError(f"model {model.model_id[:12]} has no evaluation{named}{hint}")
        if evaluation.decision != "promote":
            raise NotGatedError(
                f"evaluation {evaluation.evaluation_id} decided {evaluation.decision!r}, not"
                f" promote, for model {model.model_id[:12]}{hint}"
            )
        return evaluation

    async def rollback(self, agent: str, *, reason: str = "rollback") -> PromotionRecord:
        """Restore the champion that the current one replaced (each call steps back once)."""
        current = await self.store.get_alias(agent, "champion")
        if current is None:
            raise NoPreviousChampionError(f"agent {agent!r} has no champion to roll back")
        history = [p for p in await self.store.list_promotions(agent) if p.alias == "champion"]
        installed = [p for p in history if p.kind == "promote" and p.model_id == current]
        previous = installed[-1].previous_model_id if installed else None
        if previous is None or previous == current:
            raise NoPreviousChampionError(
                f"agent {agent!r}: champion {current[:12]} has no earlier champion to restore"
            )
        record = await self.store.promote(
            PromotionRecord(
                promotion_id=derived_id("rollback", agent, history[-1].promotion_id),
                agent=agent,
                model_id=previous,
                alias="champion",
                kind="rollback",
                target=self.target.name,
                reason=reason,
                evaluation_id=None,
                run_id=None,
            )
        )
        return await self._finish(record)

    async def last_champion_promotion(self, agent: str) -> PromotionRecord | None:
        history = [p for p in await self.store.list_promotions(agent) if p.alias == "champion"]
        return history[-1] if history else None

    # ---- announcement (outbox) ---------------------------------------------------------

    async def _finish(self, record: PromotionRecord) -> PromotionRecord:
        if record.announced_at is None:
            await self.announce(record)
            fresh = await self.store.get_promotion(record.promotion_id)
            assert fresh is not None
            return fresh
        return record

    async def announce(self, record: PromotionRecord) -> DeploymentEvent | None:
        """Deploy a champion and publish its DeploymentEvent, then mark it announced."""
        if record.alias != "champion":
            await self.store.mark_announced(record.promotion_id)
            return None
        if await self._superseded(record):
            # a later champion move (a rollback after a failed deploy, a crash replay) owns
            # the deploy: installing this one now would serve a model that is not champion
            log.warning(
                "promotion %s of %s was superseded before it deployed: not deploying it",
                record.promotion_id,
                record.model_id[:12],
            )
            await self.store.mark_announced(record.promotion_id)
            return None
        if record.target != self.target.name:
            raise DeployError(
                f"promotion {record.promotion_id} waits for deploy target {record.target!r};"
                f" this process deploys to {self.target.name!r} (rerun with --target {record.target})"
            )
        model = await self.store.get_model(record.model_id)
        path = model.path if model else None
        await self.target.deploy(
            agent=record.agent,
            model_id=record.model_id,
            model_path=path,
            promotion_id=record.promotion_id,
        )
        event = deployment_event(record, path, self.target)
        await publish_deployment(self.sink, event)
        await self.store.mark_announced(record.promotion_id)
        return event

    async def _superseded(self, record: PromotionRecord) -> bool:
        last = await self.last_champion_promotion(record.agent)
        return last is not None and last.promotion_id != record.promotion_id

    async def announce_pending(self) -> list[DeploymentEvent]:
        """Finish every committed-but-unannounced promotion, oldest first."""
        out: list[DeploymentEvent] = []
        for record in await self.store.unannounced_promotions():
            if record.alias == "champion" and record.target != self.target.name:
                continue  # another deployer's promotion: left for a process with that target
            event = await self.announce(record)
            if event is not None:
                out.append(event)
        return out


def deployment_event(record: PromotionRecord, path: str | None, target: Any) -> DeploymentEvent:
    return DeploymentEvent(
        event_id=record.promotion_id,
        promotion_id=record.promotion_id,
        agent=record.agent,
        alias=record.alias,
        model_id=record.model_id,
        previous_model_id=record.previous_model_id,
        kind=record.kind,
        run_id=record.run_id,
        evaluation_id=record.evaluation_id,
        model_path=path,
        target=record.target,
        target_ref=target.ref() if getattr(target, "name", None) == record.target else None,
    )
