"""What every CLI command shares: the console, error handling, progress bars."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

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

#: exit codes: 1 = the data failed a check, 2 = usage/config problem
EXIT_DATA = 1
EXIT_USAGE = 2


def friendly_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn rlstream errors into one clear red line and an exit code, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (ConfigError, FileNotFoundError) as exc:
            console.print(f"[bold red]error:[/] {exc}")
            raise typer.Exit(EXIT_USAGE) from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            console.print(f"[bold red]error:[/] invalid option {where}: {first.get('msg')}")
            raise typer.Exit(EXIT_USAGE) from None
        except TooManyRejectsError as exc:
            console.print(f"[bold red]error:[/] {exc}")
            raise typer.Exit(EXIT_DATA) from None
        except RlstreamError as exc:
            console.print(f"[bold red]error[/] ({exc.code}): {exc}")
            raise typer.Exit(EXIT_DATA) from None

    return wrapper


def require_files(paths: list[Path]) -> None:
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise ConfigError(f"input not found: {', '.join(missing)}")


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
