"""The evaluator service: ``faststream run rlstream.services.evaluator.app:app``.

Consumes ``rlstream.training.v1`` (succeeded runs), evaluates the candidate against the
champion (else the base model) on the dataset's held-out prompts, publishes
``EvaluationEvent`` on ``rlstream.evaluations.v1`` (key: run id) and, when the gate says
so, promotes: ``DeploymentEvent`` on ``rlstream.deployments.v1`` (key: agent).
"""

from __future__ import annotations

import logging

from faststream.kafka import KafkaMessage

from rlstream.delivery.runtime import (
    Runtime,
    documented_batch,
    kafka_app,
    raw_values,
    subscriber_kwargs,
)
from rlstream.events import DeploymentEvent, DLQRecord, EvaluationEvent, TrainingRunEvent, topics
from rlstream.registry import ProducerSink, Registry, make_target
from rlstream.services.evaluator.evaluate import load_evaluate
from rlstream.services.evaluator.handler import EvaluatorHandler
from rlstream.services.evaluator.settings import EvaluatorSettings

log = logging.getLogger("rlstream.services.evaluator")
SERVICE = "evaluator"
settings = EvaluatorSettings()
rt = Runtime(SERVICE, settings)
broker, app = kafka_app(
    SERVICE,
    settings,
    "Succeeded training runs -> held-out evaluation -> gate decision -> promotion.",
)
target = make_target(settings)
_registry: list[Registry] = []


def registry() -> Registry:
    return _registry[0]


handler = EvaluatorHandler(rt, settings, registry, load_evaluate(settings.evaluate_function))

evaluations_out = broker.publisher(
    rt.topic(topics.EVALUATIONS),
    schema=EvaluationEvent,
    title="evaluations",
    description="EvaluationEvent: the gate's decision and figures. Key: run id. "
    "event_id = evaluation id (stable per run).",
)
deployments_out = broker.publisher(
    rt.topic(topics.DEPLOYMENTS),
    schema=DeploymentEvent,
    title="deployments",
    description="DeploymentEvent: an alias moved (promote or rollback). Key: agent. "
    "event_id = promotion id.",
)
dlq_out = broker.publisher(
    rt.topic(topics.dlq(topics.TRAINING)),
    schema=DLQRecord,
    title="training-dlq",
    description="Training event the evaluator could not accept, with the reason.",
)


@broker.subscriber(  # type: ignore[untyped-decorator]
    rt.topic(topics.TRAINING),
    decoder=raw_values,
    title="training",
    description="TrainingRunEvent; only state=succeeded is evaluated. Key: run id.",
    **subscriber_kwargs(settings, SERVICE),
)
async def on_training(body: documented_batch(TrainingRunEvent), msg: KafkaMessage) -> None:  # type: ignore[valid-type]
    await rt.runner.run(msg, handler.handle)


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


@app.after_startup
async def _ready() -> None:
    rt.health.set_ready(True)


@app.after_shutdown
async def _closed() -> None:
    await rt.stop()
