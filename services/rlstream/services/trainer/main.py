"""The trainer service: the Kubernetes Job's (and the local launcher's) entrypoint.

    python -m rlstream.services.trainer --run-id R --dataset DIR [--output DIR]
        [--backend builtin|openrlhf|verl] [--model M] [--config TRAINCONFIG_JSON]
        [--method auto|sft|dpo|grpo|gspo|ppo] [--max-steps N]

``--config`` is the launcher's whole :class:`~rlstream.training.TrainConfig` (every flag
of ``rlstream train``, or ``RLSTREAM_TRAIN_CONFIG``), read back as the same model;
``--method`` and ``--max-steps`` override it when given (a hand-run trainer).

Verifies the dataset against its manifest, records the run as ``started`` in Postgres and
on ``rlstream.training.v1``, trains with :func:`rlstream.training.train` (the same call
as ``rlstream train``), writes the artifacts into the output folder and records
``succeeded`` or ``failed`` with the reason. Exit codes: 0 succeeded, 2 bad configuration
(never retried: the Job's podFailurePolicy fails at once), 1 any other failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from rlstream.errors import ConfigError, RlstreamError
from rlstream.events import TrainingRunEvent, topics
from rlstream.launch import EXIT_BAD_CONFIG, LaunchRequest, RunSpec
from rlstream.launch.runs import RunTracker
from rlstream.observability import tracing
from rlstream.services.trainer.settings import TrainerSettings
from rlstream.settings import startup_settings
from rlstream.training.config import TrainConfig

if TYPE_CHECKING:
    from rlstream.training import RunResult

log = logging.getLogger("rlstream.services.trainer")
EXIT_FAILED = 1


class BadConfig(Exception):
    """Raised for anything a retry cannot fix."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m rlstream.services.trainer")
    p.add_argument("--run-id", required=True)
    p.add_argument("--dataset", required=True, type=Path, help="dataset folder (manifest.json)")
    p.add_argument("--output", type=Path, help="run folder; default <runs_dir>/<run id>")
    p.add_argument("--method", default=None, choices=["auto", "sft", "dpo", "grpo", "gspo", "ppo"])
    p.add_argument("--backend", default="builtin")
    p.add_argument("--model", default=None, help="base model dir or id (default: bundled)")
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--config", default=None, help='TrainConfig as JSON: {"batch_size": 4}')
    p.add_argument("--agent", default=None, help="default: from the dataset")
    p.add_argument("--reward-spec", default=None, help="default: from the dataset")
    return p.parse_args(argv)


def _spec(args: argparse.Namespace, settings: TrainerSettings) -> RunSpec:
    from rlstream.curation import verify_dataset

    try:
        manifest = verify_dataset(args.dataset)
    except (OSError, ValueError, RlstreamError) as e:  # missing, corrupt or not a dataset
        raise BadConfig(f"dataset {args.dataset}: {e}") from e
    specs = manifest.reward_specs
    request = LaunchRequest(
        dataset_id=manifest.dataset_id,
        agent=args.agent or "default",
        reward_spec=args.reward_spec or (specs[0] if specs else "unknown"),
        path=str(args.dataset),
        sha256=manifest.dataset_id,
    )
    output = args.output or settings.runs_path() / args.run_id
    return RunSpec(
        run_id=args.run_id,
        request=request,
        backend=args.backend,
        base_model=args.model,
        output_dir=str(output),
        config=_config(args),
    )


def _config(args: argparse.Namespace) -> TrainConfig:
    """``--config`` as a TrainConfig, ``--method``/``--max-steps`` on top."""
    try:
        value = json.loads(args.config) if args.config else {}
    except ValueError as e:
        raise BadConfig(f"--config is not JSON: {e}") from e
    if not isinstance(value, dict):
        raise BadConfig("--config must be a JSON object of TrainConfig fields")
    if args.method is not None:
        value["method"] = args.method
    if args.max_steps is not None:
        value["max_steps"] = args.max_steps
    try:
        return TrainConfig.model_validate(value)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        raise BadConfig(f"invalid training config {where}: {first.get('msg')}") from e


def _train(spec: RunSpec) -> RunResult:
    """Call the training library; configuration problems become :class:`BadConfig`."""
    try:
        from rlstream.training import train
    except ImportError as e:
        raise BadConfig(
            f"training backends are not installed ({e}): pip install rlstream[train]"
        ) from e
    try:
        return train(
            Path(spec.request.path),
            output_dir=Path(spec.output_dir),
            config=spec.config,
            backend=spec.backend,
            base_model=spec.base_model,
            run_id=spec.run_id,
        )
    except ConfigError as e:
        raise BadConfig(str(e)) from e


class _Publisher:
    """Kafka when reachable; without it the run is still recorded (embedded laptops)."""

    def __init__(self, settings: TrainerSettings) -> None:
        self.settings = settings
        self.producer: Any = None

    async def start(self) -> None:
        s = self.settings
        if not s.trainer_publish:
            return
        from rlstream.delivery.kafka_connect import diagnose
        from rlstream.delivery.outbox import make_producer

        try:
            producer = make_producer(s, f"{s.kafka_client_id}-trainer", s.max_message_bytes)
        except ConfigError as e:
            log.warning("kafka: %s: states go to Postgres only", e)
            return
        try:
            await asyncio.wait_for(producer.start(), s.trainer_kafka_timeout_s)
        except Exception as e:
            await producer.stop()
            line = await diagnose(s) or f"kafka unreachable ({type(e).__name__})"
            log.warning("%s: states go to Postgres only", line)
            return
        self.producer = producer

    async def __call__(self, event: TrainingRunEvent) -> None:
        if self.producer is None:
            return
        topic = self.settings.topic_prefix + topics.TRAINING
        headers = tracing.inject(()) or None  # the train span: the evaluator continues it
        await self.producer.send_and_wait(
            topic, event.dump_json(), key=event.run_id.encode(), headers=headers
        )

    async def stop(self) -> None:
        if self.producer is not None:
            await self.producer.stop()


async def run(args: argparse.Namespace, settings: TrainerSettings) -> int:
    try:
        spec = _spec(args, settings)  # before any connection: a bad dataset fails fast
    except BadConfig as e:
        log.error("bad configuration: %s", e)
        return EXIT_BAD_CONFIG
    from rlstream.storage import Store, prepare_schema
    from rlstream.storage.embedded import resolve_dsn

    dsn = resolve_dsn(settings)
    await prepare_schema(dsn, migrate=settings.migrate_on_start)
    store = await Store.connect(dsn, max_size=2)
    publish = _Publisher(settings)
    await publish.start()
    tracker = RunTracker(store, publish, settings.launcher_name)
    try:
        await tracker.advance(spec, "started")
        Path(spec.output_dir).mkdir(parents=True, exist_ok=True)
        try:
            result = await asyncio.to_thread(_train, spec)
        except BadConfig as e:
            await tracker.advance(spec, "failed", f"bad configuration: {e}")
            return EXIT_BAD_CONFIG
        except Exception as e:
            log.exception("training failed")
            await tracker.advance(spec, "failed", f"{type(e).__name__}: {e}")
            return EXIT_FAILED
        metrics = {**result.metrics, "steps": result.steps, "adapter_dir": result.adapter_dir}
        if result.status == "succeeded":
            await tracker.advance(spec, "succeeded", metrics=metrics)
            return 0
        await tracker.advance(spec, "failed", result.reason or "failed", metrics)
        return EXIT_FAILED
    finally:
        await publish.stop()
        await store.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)  # argparse exits 2 on bad usage: the bad-config code
    settings = startup_settings(TrainerSettings)
    from rlstream.observability.logs import configure_logging

    configure_logging("trainer", settings.log_level, settings.log_json)
    tracing.configure_tracing("trainer", settings)
    try:
        # a child of the launch span when started with TRACEPARENT (the launchers set it)
        attrs = {"rlstream.run_id": args.run_id}
        with tracing.span("train", parent=tracing.context_from_env(), attributes=attrs) as span:
            rc = asyncio.run(run(args, settings))
            if span is not None:
                span.set_attribute("rlstream.exit_code", rc)
            if rc != 0:
                tracing.set_failed(span, f"exit code {rc}")
        return rc
    finally:
        tracing.shutdown()  # export before the process exits


if __name__ == "__main__":
    sys.exit(main())
