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
