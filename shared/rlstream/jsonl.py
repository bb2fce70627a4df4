"""JSONL files of rlstream models: the on-disk handoff between batch stages.

Reading is streaming (one line at a time) so stages run in flat memory on large files.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, TypeVar

from pydantic import BaseModel, ValidationError

from rlstream.errors import InputError
from rlstream.rollout import ScoredRollout
from rlstream.transcript import Transcript

M = TypeVar("M", bound=BaseModel)


def _open_text(path: Path, mode: str) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, mode + "t", encoding="utf-8")  # type: ignore[return-value]
    return path.open(mode, encoding="utf-8")


def write_models(path: Path, models: Iterable[BaseModel]) -> int:
    """Write one JSON document per line; returns the count. Creates parent folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with _open_text(path, "w") as fh:
        for model in models:
            fh.write(model.model_dump_json())
            fh.write("\n")
            count += 1
    return count


def read_models(path: Path, model: type[M]) -> Iterator[M]:
    """Yield validated models; a bad line (not UTF-8, not the model) raises InputError
    naming file and line."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        for line_no, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{path}:{line_no}: not UTF-8 text (byte {exc.start}); expected a "
                    f"{model.__name__} JSONL file written by an rlstream stage"
                ) from exc
            try:
                yield model.model_validate_json(line)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first.get("loc", ()))
                raise InputError(
                    f"{path}:{line_no}: not a valid {model.__name__} "
                    f"({where}: {first.get('msg')}). Was this file written by the "
                    f"matching rlstream stage?"
                ) from exc


def read_transcripts(path: Path) -> Iterator[Transcript]:
    return read_models(path, Transcript)


def read_scored(path: Path) -> Iterator[ScoredRollout]:
    return read_models(path, ScoredRollout)
