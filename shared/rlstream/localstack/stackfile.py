"""``<data_dir>/stack.json``: how ``rlstream up`` tells other processes where its stack is.

Why a file: ``rlstream status`` and the live view run in other processes (or the same one)
and must find the broker, the database, the services' health ports and the topic names
without guessing; the supervisor writes this file when the stack is up and removes it on
shutdown, so a file whose ``pid`` is gone is a stack that died without cleaning up.
"""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rlstream.errors import ConfigError

SCHEMA_VERSION = 1
FILENAME = "stack.json"
#: the data folder when neither ``--data-dir`` nor ``RLSTREAM_UP_DIR`` names one
DEFAULT_DIR = Path(".rlstream") / "up"
ENV_DIR = "RLSTREAM_UP_DIR"

State = Literal["starting", "ready", "stopping"]


class ServiceEndpoint(BaseModel):
    """One supervised service: its process and where its HTTP endpoint answers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pid: int
    health_url: str = Field(description="http://127.0.0.1:PORT (/healthz, /readyz)")
    metrics_url: str = Field(description="http://127.0.0.1:PORT/metrics")


class StackFile(BaseModel):
    """The stack ``rlstream up`` runs (schema version 1).

    ``topics`` maps a short key to the physical topic name: ``raw``, ``transcripts``,
    ``scored``, ``releases`` (the datasets topic), ``training``, ``evaluations``,
    ``deployments``, and ``<key>_dlq`` for each dead-letter topic.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    pid: int = Field(description="the supervisor's process id")
    started_at: datetime
    data_dir: str
    kafka_bootstrap: str = Field(description="127.0.0.1:PORT")
    postgres_dsn: str
    redis_url: str
    topics: dict[str, str]
    services: dict[str, ServiceEndpoint] = Field(default_factory=dict)
    consumer_groups: dict[str, str] = Field(default_factory=dict)
    state: State = "starting"

    def supervisor_alive(self) -> bool:
        """Whether the supervisor process still exists (a stale file's does not)."""
        return pid_alive(self.pid)


def now() -> datetime:
    return datetime.now(UTC)


def default_data_dir() -> Path:
    """``RLSTREAM_UP_DIR``, else ``.rlstream/up`` under the current directory."""
    env = os.environ.get(ENV_DIR)
    return Path(env) if env else DEFAULT_DIR


def stack_path(data_dir: Path) -> Path:
    return data_dir / FILENAME


def write_stack(stack: StackFile) -> Path:
    """Write atomically (a reader never sees half a file)."""
    path = stack_path(Path(stack.data_dir))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{FILENAME}.{os.getpid()}.tmp")
    tmp.write_text(stack.model_dump_json(indent=2) + "\n")
    os.replace(tmp, path)
    return path


def read_stack(data_dir: Path) -> StackFile | None:
    """The stack file under ``data_dir``; None when there is none (no stack is up)."""
    path = stack_path(data_dir)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    try:
        return StackFile.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ConfigError(f"{path} is not a stack file ({where}: {first.get('msg')})") from exc


def remove_stack(data_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        stack_path(data_dir).unlink()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True
