"""Curation thresholds: one frozen model, recorded verbatim in every dataset manifest."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class CurateOptions(BaseModel):
    """What curation keeps and drops."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: keep groups whose pass rate lies in [low, high] (Lambert's 20-80%)
    band: tuple[float, float] = (0.2, 0.8)
    #: smaller groups say nothing about difficulty (singletons are dropped)
    min_group_size: int = Field(default=2, ge=1)
    drop_dead: bool = True
    #: drop cut-off rollouts (finish reason length / a truncation flag), errored ones and
    #: ones with no assistant turn (rlstream.metrics.features.truncation_reason)
    drop_truncated: bool = True
    #: read from manifests written before any last turn counted as an ending; unused and
    #: not written
    terminal_tools: tuple[str, ...] = Field(default=(), exclude=True)
    dedupe_exact: bool = True
    #: identical rollouts with different rewards are judge noise: drop all of them
    drop_conflicting: bool = True
    #: MinHash Jaccard at or above which two same-outcome rollouts are near duplicates
    near_dup_threshold: float | None = Field(default=0.8, gt=0.0, le=1.0)
    minhash_permutations: int = Field(default=128, ge=16, le=1024)
    shingle_size: int = Field(default=3, ge=1, le=8)
    #: "reject" refuses to write a dataset when the hack scan raises an alarm
    hack_scan: Literal["report", "reject", "off"] = "report"
    #: features the reward is meant to track, beyond what the rewards declare
    endorsed: tuple[str, ...] = ()
    #: add each input reward's ``Reward.endorsed_features`` (looked up in the registry)
    endorse_from_rewards: bool = True
    #: DPO pairs: longer completion / shorter completion must not exceed this
    dpo_max_length_ratio: float = Field(default=1.5, ge=1.0)
    #: share of task keys (per agent + reward spec, by hash) kept out of training for
    #: evaluation; they go to heldout.jsonl instead (rlstream.curation.heldout)
    heldout_share: float = Field(default=0.1, ge=0.0, lt=1.0)
    k_max: int | None = Field(default=None, ge=1)
    seed: int = 0
    #: rows per conversation, per assistant turn (multi-turn tool agents: SFT on one turn,
    #: DPO at the first divergence, next-action held-out prompts), or ``auto``: turns when
    #: most clean rollouts make tool calls over several assistant turns
    granularity: Literal["auto", "conversation", "turn"] = "auto"

    @model_validator(mode="after")
    def _band_ok(self) -> CurateOptions:
        lo, hi = self.band
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(f"band must satisfy 0 <= low <= high <= 1, got {self.band}")
        return self
