"""Refuse unknown ``RLSTREAM_*`` variables at start, naming the closest valid one.

Why: pydantic-settings ignores a variable no field reads, so ``RLSTREAM_POSTGRES_DNS`` (a
typo) silently left the service on its default. Why not ``extra="forbid"``: the chart
gives every service one ConfigMap, so a variable that one service's settings class reads
(``RLSTREAM_ASSEMBLY_IDLE_TIMEOUT_S``, ingest's) reaches the others too; what counts as
known is the union over every settings class, plus the names read with ``os.environ``.

The library cannot import the services' settings classes (the architecture forbids it),
so their field names are listed in :data:`SUBCLASS_FIELDS`; a unit test
(tests/unit/test_settings_check.py) compares the list with the classes themselves.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping

from rlstream.errors import ConfigError

PREFIX = "RLSTREAM_"

#: ``RLSTREAM_*`` names read directly (``os.environ``), not through a settings class.
DIRECT_ENV: Mapping[str, str] = {
    "RLSTREAM_CACHE_DIR": "build and test cache (tools/harness, the testkit, OpenRLHF wheel)",
    "RLSTREAM_MODELS_DIR": "converted base models (training.basemodel; the trainer images)",
    "RLSTREAM_IMAGE": "set on training Job pods (launch.k8s_manifest), recorded per run",
    "RLSTREAM_IMAGE_DIGEST": "set on training Job pods with a digest image reference",
    "RLSTREAM_MODEL_ID": "set by the registry's deploy target on the serving container",
    "RLSTREAM_MODEL_PATH": "set by the registry's deploy target on the serving container",
    "RLSTREAM_SERVICE": "set by the chart on each service's pod",
    "RLSTREAM_GIT_SHA": "the build's git commit, a label of rlstream_build_info",
    "RLSTREAM_DEBUG": "the CLI's --debug (tracebacks)",
    "RLSTREAM_UP_DIR": "rlstream up: the local stack's data folder (default .rlstream/up)",
    "RLSTREAM_REQUIRE_ALL_TIERS": "test harness: a missing tier fails instead of skipping",
    "RLSTREAM_LATE_BUILDS": "test harness: slow builds finish while other tiers test",
    "RLSTREAM_HARNESS_DIR": "test harness: where the ensure-*.sh scripts are",
    "RLSTREAM_ENSURE_TOOLS": "tools/harness/ensure-all.sh: which tools to ensure",
    "RLSTREAM_SKIP_TRAINER_IMAGE": "tools/harness/ensure-images.sh",
    "RLSTREAM_PYTHON": "tools/harness: the interpreter the scripts use",
    "RLSTREAM_ROOT": "tools/harness/lib.sh: the repository root",
    "RLSTREAM_NO_GPU": "tests: treat the machine as GPU-less",
    "RLSTREAM_UPDATE_GOLDEN": "tests: rewrite golden files",
    "RLSTREAM_BENCH_DATA": "bench/: where generated inputs are kept",
    "RLSTREAM_HOTSWAP_REPORT": "tests: where the serve hot-swap load test writes its figures",
}

#: Fields declared by subclasses of :class:`rlstream.settings.Settings` (the services',
#: the launcher's, the deploy target's); the base class's own fields are read from it.
SUBCLASS_FIELDS: frozenset[str] = frozenset(
    {
        "assembly_closed_retention_s", "assembly_idle_timeout_s", "assembly_late_policy",
        "assembly_purge_interval_s", "assembly_sweep_interval_s", "auto_offset_reset",
        "base_model", "batch_max_records", "batch_timeout_ms", "broker_probe_interval_s",
        "budget_gpu_hours_per_day", "budget_gpu_hours_per_run", "budget_gpu_peak_tflops",
        "budget_mfu", "budget_model_params", "busy_after_s", "consumer_group", "dataset_dir",
        "deploy_container", "deploy_deployment", "deploy_kubeconfig", "deploy_namespace",
        "deploy_serve_url", "deploy_target", "deploy_timeout_s", "deploy_vllm_api_key",
        "deploy_vllm_url", "dlq_payload_max_bytes", "erasure_batch", "erasure_champion",
        "erasure_datasets", "evaluate_function", "eval_greedy",
        "eval_environment", "eval_environment_options", "eval_heldout_cap", "eval_k",
        "eval_max_new_tokens", "eval_max_prompts", "eval_max_turns",
        "eval_runner", "eval_seed", "gate_metric", "gate_min_effect", "gate_min_prompts",
        "health_host", "health_port", "k8s_active_deadline_s", "k8s_affinity",
        "k8s_artifact_pvc", "k8s_backoff_limit", "k8s_cpu", "k8s_env_configmap",
        "k8s_env_secret", "k8s_extra_env", "k8s_extra_env_from", "k8s_extra_volumes",
        "k8s_extra_volume_mounts", "k8s_gpus", "k8s_gpu_resource", "k8s_image",
        "k8s_image_pull_policy", "k8s_image_pull_secrets", "k8s_job_prefix",
        "k8s_kubeconfig", "k8s_memory", "k8s_namespace", "k8s_node_selector",
        "k8s_pod_annotations", "k8s_pod_labels", "k8s_priority_class", "k8s_release",
        "k8s_run_as_user", "k8s_service_account", "k8s_shm_size", "k8s_tolerations",
        "k8s_topology_spread", "k8s_ttl_after_finished_s", "k8s_watch_timeout_s",
        "launcher", "launcher_name", "launch_retry_interval_s", "max_poll_interval_ms",
        "metric_agents", "metric_agents_auto_max", "migrate_on_start", "pg_pool_max",
        "producer_compression", "profile_path", "redis_namespace",
        "release_check_interval_s", "release_lock_ttl_ms", "release_max_rollouts",
        "release_min_gradient_support", "release_min_groups", "release_min_rollouts",
        "release_overrides", "reports_dir", "retention_datasets_keep", "retention_datasets_s",
        "retention_interval_s", "retention_pending_rollouts_s", "retention_run_artifacts_s",
        "retention_turn_buffers_s", "reward_config", "reward_spec", "runs_dir",
        "serve_admin_token",
        "session_timeout_ms", "stall_after_s", "subject_fields", "topic_prefix",
        "topics_overrides_file",
        "topics_replication_factor", "trainer_kafka_timeout_s",
        "trainer_publish", "train_backend", "train_base_model", "train_config",
        "train_max_steps", "train_on_policy", "unhealthy_after_s",
    }
)  # fmt: skip


def known_names(base_fields: Iterable[str]) -> frozenset[str]:
    """Every valid ``RLSTREAM_*`` name: ``base_fields`` (the base class's), the
    subclasses' (listed), and the directly read ones."""
    fields = {*base_fields, *SUBCLASS_FIELDS}
    return frozenset({PREFIX + f.upper() for f in fields} | set(DIRECT_ENV))


def unknown_settings(environ: Mapping[str, str], known: Iterable[str]) -> list[str]:
    """One message per ``RLSTREAM_*`` variable of ``environ`` not in ``known`` (sorted)."""
    valid = sorted(set(known))
    out = []
    for name in sorted(environ):
        upper = name.upper()  # pydantic-settings matches names case-insensitively
        if not upper.startswith(PREFIX) or upper in valid:
            continue
        close = difflib.get_close_matches(upper, valid, n=1, cutoff=0.75)
        hint = f": did you mean {close[0]}?" if close else " (no setting has a similar name)"
        out.append(f"unknown setting {name}{hint}")
    return out


def check_environment(base_fields: Iterable[str], environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`ConfigError` (one line) if the environment holds an unknown
    ``RLSTREAM_*`` variable. Called where settings are built (``Settings``' validator)."""
    problems = unknown_settings(
        os.environ if environ is None else environ, known_names(base_fields)
    )
    if problems:
        raise ConfigError(
            "; ".join(problems) + " (a variable no rlstream process reads is refused: a "
            "typo must not silently leave a setting at its default)"
        )
