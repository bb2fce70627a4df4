"""Settings: built once at startup from the environment (``RLSTREAM_*``), then frozen."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal, Self, TypeVar

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from rlstream.errors import ConfigError
from rlstream.settings_check import check_environment


class Settings(BaseSettings):
    """Process-wide configuration. Nested values use ``__`` (``RLSTREAM_KAFKA__...`` style
    is avoided on purpose: every knob is one flat, documented variable)."""

    # extra="ignore" because one environment serves every service's class; unknown
    # RLSTREAM_* names are refused by the validator below (rlstream.settings_check).
    model_config = SettingsConfigDict(
        env_prefix="RLSTREAM_", frozen=True, extra="ignore", env_file=None
    )

    data_dir: Path = Field(default=Path(".rlstream"), description="artifacts + embedded DB")
    kafka_bootstrap: str = "127.0.0.1:9092"
    kafka_client_id: str = "rlstream"
    max_message_bytes: int = 4 * 1024 * 1024
    # --- Kafka security (issue 19): read by rlstream.delivery.kafka_security, which every
    # Kafka client (consumer, producers, admin, CLI) builds its connection options from.
    kafka_security_protocol: str = Field(
        default="PLAINTEXT", description="PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL"
    )
    kafka_sasl_mechanism: str = Field(
        default="PLAIN", description="PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512 | OAUTHBEARER"
    )
    kafka_sasl_username: str | None = None
    kafka_sasl_password: SecretStr | None = None
    kafka_sasl_password_file: Path | None = Field(
        default=None, description="file holding the SASL password (a mounted Secret)"
    )
    kafka_ssl_cafile: Path | None = Field(
        default=None, description="CA bundle (PEM) the broker certificate must chain to"
    )
    kafka_ssl_certfile: Path | None = Field(default=None, description="client cert (mTLS)")
    kafka_ssl_keyfile: Path | None = Field(default=None, description="client key (mTLS)")
    kafka_ssl_key_password: SecretStr | None = None
    kafka_ssl_check_hostname: bool = True
    kafka_oauth_token_provider: str | None = Field(
        default=None,
        description="module:attr of an aiokafka AbstractTokenProvider (class or factory)",
    )
    # --- end Kafka security
    postgres_dsn: SecretStr | None = Field(
        default=None, description="None: start the embedded PostgreSQL under data_dir"
    )
    require_postgres_dsn: bool = Field(
        default=False,
        description="refuse to start without postgres_dsn instead of starting the embedded "
        "PostgreSQL (the chart sets it when a Secret is given: a misnamed key must not "
        "leave each pod with a database of its own)",
    )
    embedded_postgres: bool = Field(
        default=False,
        description="let a service (ingest, grader, curator, evaluator) without postgres_dsn "
        "start an embedded PostgreSQL under data_dir: a one-pod demo only (the CLI and the "
        "batch pipeline always may)",
    )
    postgres_ssl_rootcert: Path | None = Field(
        default=None,
        description="CA bundle (PEM) the server certificate must chain to; added to the DSN "
        "as sslrootcert, with sslmode=verify-full unless the DSN names an sslmode",
    )
    pii_key: SecretStr | None = Field(
        default=None,
        description="secret (>= 32 bytes) that keys the stand-ins of identifiers holding PII; "
        "services refuse to start without it unless embedded_postgres (docs/pii.md)",
    )
    pii_key_file: Path | None = Field(
        default=None, description="file holding the PII key (a mounted Secret)"
    )
    pii_ner_model: str | None = Field(
        default=None,
        description="a local transformers token-classification model directory or spaCy "
        "pipeline whose person names are redacted in union with the built-in detectors; "
        "never downloaded (docs/pii.md)",
    )
    pii_ner_max_chars: int = Field(
        default=20_000, ge=1, description="characters of one text the NER model reads"
    )
    redis_url: SecretStr | None = Field(
        default=None,
        description="redis://[user:password@]host:port/db, or rediss:// for TLS",
    )
    redis_ssl_cafile: Path | None = Field(
        default=None, description="CA bundle (PEM) a rediss:// server must chain to"
    )
    redis_idempotency_ttl_s: int = 7 * 24 * 3600
    task_key_field: str | None = None
    pass_threshold: float | None = None
    heldout_share: float = Field(
        default=0.1,
        ge=0.0,
        lt=1.0,
        description="share of each agent's task keys kept out of training (any reward spec)",
    )
    log_json: bool = True
    log_level: str = "INFO"
    tracing: Literal["off", "otlp", "console"] = Field(
        default="off",
        description="OpenTelemetry spans (docs/tracing.md): otlp exports to otlp_endpoint, "
        "console prints them; needs the tracing extra (absent: a warning, tracing off)",
    )
    otlp_endpoint: str | None = Field(
        default=None,
        description="OTLP/HTTP collector base URL (http://collector:4318); unset: the "
        "standard OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, else localhost:4318",
    )

    @model_validator(mode="after")
    def _known_environment(self) -> Self:
        check_environment(Settings.model_fields)
        return self


S = TypeVar("S", bound=Settings)


def load_settings() -> Settings:
    """Read the environment once. Call at startup and pass the object down."""
    return Settings()


def startup_settings(cls: type[S]) -> S:
    """A deployable's settings, read at its start: a bad environment (an unknown or
    invalid ``RLSTREAM_*`` variable) is one line on stderr and exit code 2, the line a
    pod's log shows, instead of a traceback from the import of the service's module."""
    try:
        return cls()
    except ConfigError as exc:
        line = f"error: {exc}"
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "RLSTREAM_" + ".".join(str(p) for p in first.get("loc", ())).upper()
        line = f"error: invalid setting {name}: {first.get('msg')}"
    print(line, file=sys.stderr, flush=True)
    raise SystemExit(2)
