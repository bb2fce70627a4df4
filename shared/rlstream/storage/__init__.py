"""Storage: Postgres as the system of record, Redis for hot state.

``Store`` (asyncpg) holds transcripts, rollouts, groups, datasets, lineage, runs,
evaluations, promotions and open turn buffers; ``RedisState`` holds idempotency keys,
group counters, the near-duplicate index and single-flight locks. ``upgrade`` applies the
packaged migrations; ``resolve_dsn`` starts the embedded PostgreSQL when none is set.
"""

from rlstream.storage._erasure import ErasureOps, erased_digest
from rlstream.storage._registry import Unchecked
from rlstream.storage._status import EvaluationSummary, PoolCounts, RunSummary
from rlstream.storage.embedded import (
    ensure_runtime_dir,
    resolve_dsn,
    start_embedded_postgres,
    stop_embedded_postgres,
)
from rlstream.storage.errors import (
    AliasMovedError,
    AlreadyReleasedError,
    HeldoutReleaseError,
    LockBusyError,
    MigrationError,
    UnknownRecordError,
    UnredactedTranscriptError,
)
from rlstream.storage.locks import Lock, release_lock_name
from rlstream.storage.migrate import (
    SchemaBehindError,
    SchemaNewerError,
    check_schema,
    current,
    latest_version,
    prepare_schema,
    upgrade,
)
from rlstream.storage.neardup import NearDupIndex, hamming, simhash64
from rlstream.storage.rebuild import RebuildReport, rebuild_from_postgres
from rlstream.storage.records import (
    ConversationSource,
    DatasetRecord,
    ErasedRollout,
    ErasureImpact,
    ErasureRecord,
    ErasureRows,
    ErasureTargets,
    EvaluationRecord,
    GroupKey,
    GroupStats,
    Lineage,
    LineageEdge,
    LineageKind,
    LineageNode,
    ModelRecord,
    PromotionRecord,
    RunRecord,
    TurnBuffer,
)
from rlstream.storage.redis_state import RedisState
from rlstream.storage.store import Store, rollout_features, rollout_group

__all__ = [
    "AliasMovedError",
    "AlreadyReleasedError",
    "ConversationSource",
    "DatasetRecord",
    "ErasedRollout",
    "ErasureImpact",
    "ErasureOps",
    "ErasureRecord",
    "ErasureRows",
    "ErasureTargets",
    "EvaluationRecord",
    "EvaluationSummary",
    "GroupKey",
    "GroupStats",
    "HeldoutReleaseError",
    "Lineage",
    "LineageEdge",
    "LineageKind",
    "LineageNode",
    "Lock",
    "LockBusyError",
    "MigrationError",
    "ModelRecord",
    "NearDupIndex",
    "PoolCounts",
    "PromotionRecord",
    "RebuildReport",
    "RedisState",
    "RunRecord",
    "RunSummary",
    "SchemaBehindError",
    "SchemaNewerError",
    "Store",
    "TurnBuffer",
    "Unchecked",
    "UnknownRecordError",
    "UnredactedTranscriptError",
    "check_schema",
    "current",
    "ensure_runtime_dir",
    "erased_digest",
    "hamming",
    "latest_version",
    "prepare_schema",
    "rebuild_from_postgres",
    "release_lock_name",
    "resolve_dsn",
    "rollout_features",
    "rollout_group",
    "simhash64",
    "start_embedded_postgres",
    "stop_embedded_postgres",
    "upgrade",
]
