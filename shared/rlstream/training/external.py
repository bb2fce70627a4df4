"""What every external-command backend (OpenRLHF, verl) shares: the prepared run, the
launch-time hash check of every planned input, and the logged subprocess.

A plan is computed without touching a GPU; ``train`` writes the planned files, re-reads
every input and checks its sha256 against the plan, and only then runs the command, its
output streamed to the Job's log and to ``<work>/train.log``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from rlstream.errors import ConfigError

PLAN_FILE = "plan.json"
LOG_FILE = "train.log"


@dataclass(frozen=True)
class Prepared:
    """The argv, the files to write (path -> bytes), every file the command reads with its
    sha256 (checked again right before launch), and a summary."""

    method: str
    argv: list[str]
    files: dict[Path, bytes]
    inputs: dict[Path, str]
    steps: int
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def sha256(self) -> dict[str, str]:
        return {path.name: digest for path, digest in self.inputs.items()}

    @property
    def argv_sha256(self) -> str:
        return hashlib.sha256(orjson.dumps(self.argv)).hexdigest()


def launcher(planned: str) -> str:
    """The planned ``python3`` / ``deepspeed`` as this environment's own executables."""
    if planned == "python3":
        return sys.executable
    beside = Path(sys.executable).with_name(planned)
    found = str(beside) if beside.is_file() else shutil.which(planned)
    if found is None:
        raise ConfigError(f"the {planned} launcher is not installed here (the GPU image has it)")
    return found


def write_planned(
    p: Prepared,
    work: Path,
    verifiers: Mapping[str, Callable[[Path, str], None]] | None = None,
) -> None:
    """Write the planned files and ``<work>/plan.json``, then re-read every input and
    check its sha256 (``verifiers``: a file name's own check, e.g. a reward file's)."""
    for path, data in p.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    work.mkdir(parents=True, exist_ok=True)
    record = {"argv": p.argv, "argv_sha256": p.argv_sha256, "sha256": p.sha256, **p.summary}
    (work / PLAN_FILE).write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2))
    for path, digest in p.inputs.items():
        verify = (verifiers or {}).get(path.name)
        if verify is not None:
            verify(path, digest)
            continue
        got = hashlib.sha256(path.read_bytes()).hexdigest()
        if got != digest:
            raise ConfigError(f"{path}: sha256 {got} is not the planned {digest}")


def run_logged(argv: list[str], cwd: Path, log_path: Path, append: bool = False) -> tuple[int, str]:
    """Run ``argv`` in ``cwd``; its output goes to our stdout (the Job log) and to
    ``log_path`` (``append``: after what is there). Returns the exit code and the last
    non-empty output line."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    last: deque[str] = deque(maxlen=1)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with (
        log_path.open("a" if append else "w", encoding="utf-8") as log,
        subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        ) as proc,
    ):
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            sys.stdout.write(line)
            if line.strip():
                last.append(line.strip()[:500])
        code = proc.wait()
    return code, last[0] if last else ""
