"""Registry errors: part of the one tree rooted at :class:`rlstream.errors.RlstreamError`."""

from __future__ import annotations

from rlstream.errors import RlstreamError, TransientError


class RegistryError(RlstreamError):
    """A registry request cannot be carried out (unknown model, no previous champion…)."""

    code = "registry_error"


class UnknownModelError(RegistryError):
    code = "unknown_model"


class NoPreviousChampionError(RegistryError):
    code = "no_previous_champion"


class NotGatedError(RegistryError):
    """A gated promotion found no evaluation of the model that decided ``promote`` (an
    operator may still promote it explicitly: ``rlstream promote --override``)."""

    code = "not_gated"


class ChampionMovedError(RegistryError):
    """The champion is no longer the model the candidate was evaluated against: nothing
    moved, the refusal is recorded on the evaluation, the candidate needs re-evaluation."""

    code = "champion_moved"


class DeployError(RegistryError, TransientError):
    """The deploy target refused the change (RBAC, missing Deployment, API down).

    Transient on purpose: the promotion is committed and stays unannounced, so a service
    retries the announcement instead of dead-lettering the decision."""

    code = "deploy_failed"
