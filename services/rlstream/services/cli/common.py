"""What every CLI command shares: the console, error handling, progress bars."""

from __future__ import annotations

import functools
import glob
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from rlstream.errors import ConfigError, RlstreamError, TooManyRejectsError

console = Console(stderr=True)
out = Console()

P = ParamSpec("P")
R = TypeVar("R")

#: exit codes: 1 = the data failed a check (``rlstream eval``: the gate rejected),
#: 2 = usage/config problem
EXIT_DATA = 1
EXIT_USAGE = 2
#: an unexpected error (a bug)
EXIT_INTERNAL = 3
#: ``rlstream eval``: too few held-out prompts for the gate to decide (not a rejection:
#: evaluate on more prompts)
EXIT_INSUFFICIENT = 4


#: set by the global ``--debug`` flag (or RLSTREAM_DEBUG=1): let tracebacks through
DEBUG = os.environ.get("RLSTREAM_DEBUG", "") not in ("", "0")


def _os_message(exc: OSError) -> str:
    """One line for a file-system error, naming the path and what to do about it."""
    where = exc.filename if exc.filename is not None else ""
    what = exc.strerror or type(exc).__name__
    hints = {
        PermissionError: "choose a path you can write to, or fix its permissions",
        FileExistsError: "a file is in the way of a folder: pick another path",
        NotADirectoryError: "a parent of this path is a file, not a folder: pick another path",
        IsADirectoryError: "this is a folder: give a file path",
        FileNotFoundError: "check the path",
    }
    hint = next((h for t, h in hints.items() if isinstance(exc, t)), "check the path")
    return f"{what}: {where} ({hint})" if where else f"{what} ({hint})"


def friendly_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn errors into one clear red line and an exit code; tracebacks only with --debug."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, click.ClickException):
            raise
        except Exception as exc:
            if DEBUG:
                raise
            code, line = error_line(exc)
            console.print(line, markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(code) from None

    return wrapper


def error_line(exc: BaseException) -> tuple[int, str]:
    """(exit code, one-line message) for any error reaching the user."""
    if isinstance(exc, ConfigError):
        return EXIT_USAGE, f"error: {exc}"
    if isinstance(exc, OSError):
        return EXIT_USAGE, f"error: {_os_message(exc)}"
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return EXIT_USAGE, f"error: invalid option {where}: {first.get('msg')}"
    if isinstance(exc, TooManyRejectsError):
        return EXIT_DATA, f"error: {exc}"
    if isinstance(exc, RlstreamError):
        return EXIT_DATA, f"error ({exc.code}): {exc}"
    if isinstance(exc, UnicodeDecodeError):
        return EXIT_DATA, f"error: input is not UTF-8 text ({exc.reason} at byte {exc.start})"
    first_line = str(exc).splitlines()[0] if str(exc) else ""
    return EXIT_INTERNAL, (
        f"error: unexpected {type(exc).__name__}: {first_line} "
        "(a bug: rerun with --debug for the traceback and report it)"
    )


def require_files(paths: list[Path]) -> None:
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise ConfigError(f"input not found: {', '.join(missing)}")


def expand_inputs(paths: list[str] | list[Path]) -> list[Path]:
    """Paths as given, with glob patterns (quoted, so the shell left them) expanded, sorted.

    A pattern that matches nothing is an error, not an empty input.
    """
    out: list[Path] = []
    for p in map(str, paths):
        if any(ch in p for ch in "*?[") and not os.path.exists(p):
            hits = sorted(glob.glob(p, recursive=True))
            if not hits:
                raise ConfigError(f"no file matches {p}")
            out.extend(Path(h) for h in hits)
        else:
            out.append(Path(p))
    return out


def require_nonempty(path: Path, what: str) -> None:
    """A clear error for an input file with nothing but whitespace in it."""
    if not path.is_file():
        return
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            if chunk.strip():
                return
    raise ConfigError(f"{path} is empty: expected {what}")


@contextmanager
def progress(description: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """A progress bar (or spinner without a total) on stderr; yields ``advance(n)``."""
    columns: list[Any] = [SpinnerColumn(), TextColumn("[bold]{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    else:
        columns += [TextColumn("{task.completed:,} done")]
    columns.append(TimeElapsedColumn())
    disable = not sys.stderr.isatty()
    with Progress(*columns, console=console, transient=True, disable=disable) as bar:
        task = bar.add_task(description, total=total)

        def advance(n: int = 1) -> None:
            bar.advance(task, n)

        yield advance
