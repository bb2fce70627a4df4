"""Prometheus metrics shared by every service (one definition, labelled by service)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

CONSUMED = Counter("rlstream_messages_consumed_total", "Records consumed", ["service", "topic"])
PUBLISHED = Counter(
    "rlstream_messages_published_total", "Records published (broker-acked)", ["service", "topic"]
)
DEAD_LETTERED = Counter(
    "rlstream_messages_dead_lettered_total",
    "Records sent to a dead-letter topic",
    ["service", "topic", "reason"],
)
RETRIES = Counter(
    "rlstream_batch_retries_total", "Batches rewound and retried", ["service", "code"]
)
CONSUMER_LAG = Gauge(
    "rlstream_consumer_lag", "High watermark minus next offset", ["service", "topic", "partition"]
)
HANDLER_SECONDS = Histogram(
    "rlstream_handler_seconds",
    "Time to process and commit one batch",
    ["service"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
BATCH_SIZE = Histogram(
    "rlstream_batch_records",
    "Records per consumed batch",
    ["service"],
    buckets=(1, 10, 50, 100, 250, 500, 1000, 2000, 5000),
)
GRADIENT_SUPPORT = Gauge(
    "rlstream_gradient_support",
    "Gradient support of the pending (unreleased) pool",
    ["agent", "reward_spec"],
)
PENDING_ROLLOUTS = Gauge(
    "rlstream_pending_rollouts", "Unreleased rollouts in the pool", ["agent", "reward_spec"]
)
DATASETS_RELEASED = Counter(
    "rlstream_datasets_released_total", "Datasets sealed and released", ["agent", "reward_spec"]
)
OPEN_CONVERSATIONS = Gauge(
    "rlstream_open_conversations", "Turn-delta conversations being assembled", ["service"]
)
UNREADABLE = Counter(
    "rlstream_unreadable_records_total",
    "Records the client could not read as sent (header key not UTF-8, corrupt bytes): "
    "dead-lettered and skipped. Alarm on any increase.",
    ["service", "topic"],
)
STALLED_PARTITIONS = Gauge(
    "rlstream_stalled_partitions",
    "Partitions with waiting records and no commit for the stall window",
    ["service"],
)
STALL_SECONDS = Gauge(
    "rlstream_partition_stall_seconds",
    "Longest time a stalled partition (waiting records, no commit for stall_after_s) has "
    "gone without a commit, at the last readiness probe; past unhealthy_after_s /healthz fails",
    ["service"],
)
PRODUCER_RENEWALS = Counter(
    "rlstream_producer_renewals_total",
    "Producers replaced after losing their idempotence (sequence) state",
    ["service"],
)


class BoundedLabel:
    """Label values from a fixed set, so /metrics cannot grow with hostile input.

    A value in ``allowed`` (configuration) is its own label; otherwise, while fewer than
    ``auto_max`` values were admitted, a new value that holds no PII is admitted too (so a
    small deployment needs no configuration); everything else is ``other``. 3,000 agent
    names grew the curator's /metrics from 3 KB to 814 KB before this.
    """

    OTHER = "other"

    def __init__(self, allowed: tuple[str, ...] = (), auto_max: int = 20) -> None:
        self.allowed = frozenset(allowed)
        self.auto_max = auto_max
        self._auto: set[str] = set()

    def __call__(self, value: str | None) -> str:
        if value is None:
            return self.OTHER
        if value in self.allowed or value in self._auto:
            return value
        if len(self._auto) < self.auto_max and len(value) <= 64:
            from rlstream.pii.fields import has_pii

            if not has_pii(value):
                self._auto.add(value)
                return value
        return self.OTHER


DUPLICATES = Counter(
    "rlstream_duplicates_dropped_total",
    "Repeats of an already accepted record (same id, same content), not published again",
    ["service"],
)
CONFLICTS = Counter(
    "rlstream_conflicting_versions_total",
    "Records whose id was accepted first with different content: dead-lettered",
    ["service"],
)
UNPARSEABLE_JOBS = Counter(
    "rlstream_launch_jobs_unparseable_total",
    "Training Jobs whose run-spec annotation does not parse (written by another release): "
    "logged and skipped by the watcher, which goes on reporting the others",
)

BUILD_INFO = Gauge(
    "rlstream_build_info",
    "Always 1; the labels say which build runs (git_sha: RLSTREAM_GIT_SHA, else unknown)",
    ["version", "git_sha", "python"],
)
TRAINING_RUNS = Counter(
    "rlstream_training_runs_total",
    "Training run state changes seen on rlstream.training.v1 by the evaluator, once per "
    "event_id (launched, started, succeeded, failed, over_budget)",
    ["state"],
)
EVALUATIONS = Counter(
    "rlstream_evaluations_total",
    "Candidates evaluated by the gate, by decision (promote, reject, insufficient)",
    ["decision"],
)
EVALUATION_SECONDS = Histogram(
    "rlstream_evaluation_seconds",
    "Time to evaluate one candidate against its baseline",
    buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200),
)
RETENTION_REMOVED = Counter(
    "rlstream_retention_removed_total",
    "What the curator's retention pass removed, by kind: turn_buffers and pending_rollouts "
    "(rows), datasets (releases whose training files went), run_artifacts (run folders)",
    ["kind"],
)
PROMOTIONS = Counter(
    "rlstream_promotions_total",
    "Gate decisions to promote: promoted (the alias moved) or refused (the champion moved "
    "since the evaluation)",
    ["outcome"],
)


def build_info() -> dict[str, str]:
    """version (the installed package), git_sha (RLSTREAM_GIT_SHA, set at image build or by
    the deployment, else "unknown"), python."""
    import os
    import platform
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("rlstream")
    except PackageNotFoundError:
        ver = "unknown"
    sha = os.environ.get("RLSTREAM_GIT_SHA", "").strip() or "unknown"
    return {"version": ver, "git_sha": sha[:40], "python": platform.python_version()}


# set once per process on import: every service's /metrics imports this module
BUILD_INFO.labels(**build_info()).set(1)
