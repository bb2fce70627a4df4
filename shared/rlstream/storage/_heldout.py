"""Held-out task keys in Postgres: evaluation-only prompts, never released for training.

The ``heldout_keys`` table and its triggers (migrations 0002, 0004: per agent, under every
reward spec) make the rule hold for every writer; these methods are the normal way in. Which keys to hold out is decided in the
library (:mod:`rlstream.curation.heldout`); here they are recorded "when first seen", so a
later change of the share never moves a key that was already held out or released.
"""

from __future__ import annotations

from collections.abc import Sequence

from rlstream.storage._base import StoreBase


class HeldoutOps(StoreBase):
    async def hold_out(
        self, agent: str | None, reward_spec: str, task_keys: Sequence[str], share: float
    ) -> set[str]:
        """Record ``task_keys`` as held out for ``agent``, except keys some dataset of the
        agent already released under any spec (those stay trainable: holding them out now
        could not make them unseen). ``reward_spec`` is recorded as the spec the key was
        first held out under; the split itself is per agent.

        Returns every key of ``task_keys`` that is held out after the call.
        """
        keys = sorted(set(task_keys))
        if keys:
            await self._pool.execute(
                "INSERT INTO heldout_keys (agent, reward_spec, task_key, share)"
                " SELECT $1, $2, k, $4 FROM unnest($3::text[]) AS k"
                " WHERE NOT EXISTS (SELECT 1 FROM rollouts r WHERE r.agent = $1"
                " AND r.task_key = k AND r.released_in IS NOT NULL)"
                " ON CONFLICT DO NOTHING",
                agent or "",
                reward_spec,
                keys,
                share,
            )
        return await self.heldout_keys(agent, keys)

    async def heldout_keys(
        self, agent: str | None, task_keys: Sequence[str] | None = None
    ) -> set[str]:
        """The held-out keys of this agent (only among ``task_keys`` if given)."""
        rows = await self._pool.fetch(
            "SELECT task_key FROM heldout_keys WHERE agent = $1"
            " AND ($2::text[] IS NULL OR task_key = ANY($2))",
            agent or "",
            None if task_keys is None else list(task_keys),
        )
        return {str(r[0]) for r in rows}
