"""The model registry: models named by their weights digest, aliases ``champion`` and
``challenger``, promotion (one transaction + a ``DeploymentEvent``), rollback, and the
deploy targets ``none`` and ``kubernetes``. See docs/registry.md.
"""

from rlstream.registry.decisions import (
    CandidateRun,
    Verdict,
    apply_decision,
    event_from_record,
    record_evaluation,
    record_run,
    settle,
    stored_verdict,
)
from rlstream.registry.deploy import (
    ANNOTATION_MODEL,
    ENV_MODEL_ID,
    ENV_MODEL_PATH,
    DeploySettings,
    DeployTarget,
    KubernetesTarget,
    NoneTarget,
    deployment_patch,
    make_target,
)
from rlstream.registry.errors import (
    ChampionMovedError,
    DeployError,
    NoPreviousChampionError,
    NotGatedError,
    RegistryError,
    UnknownModelError,
)
from rlstream.registry.ids import evaluation_id_for, model_id_for, model_record, weights_digest
from rlstream.registry.publish import (
    EventSink,
    KafkaSink,
    NullSink,
    ProducerSink,
    publish_deployment,
    publish_evaluation,
)
from rlstream.registry.registry import Registry, deployment_event

__all__ = [
    "ANNOTATION_MODEL",
    "ENV_MODEL_ID",
    "ENV_MODEL_PATH",
    "CandidateRun",
    "ChampionMovedError",
    "DeployError",
    "DeploySettings",
    "DeployTarget",
    "EventSink",
    "KafkaSink",
    "KubernetesTarget",
    "NoPreviousChampionError",
    "NoneTarget",
    "NotGatedError",
    "NullSink",
    "ProducerSink",
    "Registry",
    "RegistryError",
    "UnknownModelError",
    "Verdict",
    "apply_decision",
    "deployment_event",
    "deployment_patch",
    "evaluation_id_for",
    "event_from_record",
    "make_target",
    "model_id_for",
    "model_record",
    "publish_deployment",
    "publish_evaluation",
    "record_evaluation",
    "record_run",
    "settle",
    "stored_verdict",
    "weights_digest",
]
