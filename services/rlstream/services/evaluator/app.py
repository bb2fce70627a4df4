"""The evaluator service: ``faststream run rlstream.services.evaluator.app:app``.

Consumes ``rlstream.training.v1`` (succeeded runs), evaluates the candidate against the
champion (else the base model) on the dataset's held-out prompts, publishes
``EvaluationEvent`` on ``rlstream.evaluations.v1`` (key: run id) and, when the gate says
so, promotes: ``DeploymentEvent`` on ``rlstream.deployments.v1`` (key: agent).
"""

from __future__ import annotations

import logging

from rlstream.delivery.service import StreamService, Topic
from rlstream.events import DeploymentEvent, DLQRecord, EvaluationEvent, TrainingRunEvent, topics
from rlstream.registry import ProducerSink, Registry, make_target
from rlstream.services.evaluator.evaluate import load_evaluate
from rlstream.services.evaluator.handler import EvaluatorHandler
from rlstream.services.evaluator.settings import EvaluatorSettings
from rlstream.services.evaluator.specs import checking_spec, spec_resolver
from rlstream.settings import startup_settings

log = logging.getLogger("rlstream.services.evaluator")
SERVICE = "evaluator"
settings = startup_settings(EvaluatorSettings)
service = StreamService(
    SERVICE,
    settings,
    "Succeeded training runs -> held-out evaluation -> gate decision -> promotion.",
    source=Topic(
        topics.TRAINING,
        TrainingRunEvent,
        "training",
        "TrainingRunEvent; only state=succeeded is evaluated. Key: run id.",
    ),
    outputs=(
        Topic(
            topics.EVALUATIONS,
            EvaluationEvent,
            "evaluations",
            "EvaluationEvent: the gate's decision and figures. Key: run id. "
            "event_id = evaluation id (stable per run).",
        ),
        Topic(
            topics.DEPLOYMENTS,
            DeploymentEvent,
            "deployments",
            "DeploymentEvent: an alias moved (promote or rollback). Key: agent. "
            "event_id = promotion id.",
        ),
        Topic(
            topics.dlq(topics.TRAINING),
            DLQRecord,
            "training-dlq",
            "Training event the evaluator could not accept, with the reason.",
        ),
    ),
)
rt, broker, app = service.rt, service.broker, service.app
target = make_target(settings)
_registry: list[Registry] = []


def registry() -> Registry:
    return _registry[0]


# the run's reward spec is resolved as training resolves it before any evaluation; the
# reward config is read here, so a bad RLSTREAM_REWARD_CONFIG stops the service at startup
specs = spec_resolver(settings.reward_config)
evaluate = checking_spec(load_evaluate(settings.evaluate_function), specs)
handler = EvaluatorHandler(rt, settings, registry, evaluate)
service.handler = handler.handle


@app.on_startup
async def _start() -> None:
    await rt.start()
    assert rt.producer is not None
    _registry.append(
        Registry(rt.store, target=target, sink=ProducerSink(rt.producer, settings.topic_prefix))
    )
    try:  # promotions committed before a crash; a failure here is retried with the run
        await registry().announce_pending()
    except Exception:
        log.warning("pending promotions not announced yet; will retry", exc_info=True)
