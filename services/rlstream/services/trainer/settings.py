"""Trainer settings: the launcher's and the services' knobs (env ``RLSTREAM_*``)."""

from __future__ import annotations

from pydantic import Field

from rlstream.delivery.runtime import ServiceSettings
from rlstream.launch.settings import LaunchSettings


class TrainerSettings(ServiceSettings, LaunchSettings):
    launcher_name: str = Field(default="local", description="set by the launcher (events)")
    trainer_publish: bool = Field(
        default=True,
        description="publish states on rlstream.training.v1; with no reachable Kafka the "
        "run is still recorded in Postgres",
    )
    trainer_kafka_timeout_s: float = 15.0
