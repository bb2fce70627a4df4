"""Path confinement for callers that must not reach outside one folder (``rlstream mcp``).

An agent driving rlstream names files; it must not be able to read or write anything but
the workspace it was given. Every path is resolved with ``realpath`` (so a symlink that
points out is caught where it points, not where it sits) and refused unless it lands inside
the workspace root. ``..`` is refused outright, even when it would land back inside: a path
an agent writes should say where it goes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from rlstream.errors import ConfigError


class WorkspaceError(ConfigError):
    """A path argument names something outside the configured workspace."""

    code = "outside_workspace"


class Workspace:
    """One root folder; :meth:`path` turns a caller's path into a confined real path."""

    def __init__(self, root: str | Path) -> None:
        real = Path(os.path.realpath(root))
        if not real.is_dir():
            raise ConfigError(f"workspace {root} is not a folder")
        self.root = real

    def inside(self, real: Path) -> bool:
        return real == self.root or self.root in real.parents

    def path(self, value: str | Path, *, what: str = "path") -> Path:
        """The real path of ``value`` (relative paths are taken from the root), or refused."""
        text = str(value)
        if not text or text == "-":
            raise WorkspaceError(f"{what} {text!r}: name a file inside the workspace {self.root}")
        given = Path(text).expanduser() if text.startswith("~") else Path(text)
        if ".." in given.parts:
            raise WorkspaceError(
                f"{what} {text}: '..' is not allowed; name paths inside the workspace {self.root}"
            )
        full = given if given.is_absolute() else self.root / given
        real = Path(os.path.realpath(full))
        if self.inside(real):
            return real
        lexical = Path(os.path.abspath(full))
        if self.inside(lexical) or self.inside(Path(os.path.realpath(lexical.parent))):
            raise WorkspaceError(
                f"{what} {text} is a symlink to {real}, outside the workspace {self.root}"
            )
        raise WorkspaceError(f"{what} {text} is outside the workspace {self.root}")

    def optional(self, value: str | Path | None, *, what: str = "path") -> Path | None:
        return None if value is None else self.path(value, what=what)

    def files(self, values: Iterable[str | Path], *, what: str = "input") -> list[Path]:
        """Named files, folders expanded to their log files, globs expanded from the root;
        every file found is confined too (a symlink inside a folder cannot lead out)."""
        from rlstream.ingest.reader import expand_paths

        found: list[Path] = []
        for value in values:
            text = str(value)
            if any(ch in text for ch in "*?["):
                pattern = self.path(text, what=what)  # refuses '..' and absolute outside
                rel = pattern.relative_to(self.root) if pattern != self.root else Path(".")
                hits = sorted(self.root.glob(str(rel)))
                if not hits:
                    raise ConfigError(f"no file matches {text}")
                named = [self.path(h, what=what) for h in hits]
            else:
                named = [self.path(text, what=what)]
            for f in expand_paths(named):
                found.append(self.path(f, what=what))
        return found

    def relative(self, real: Path) -> str:
        """How a path is shown back to the caller: relative to the root."""
        return "." if real == self.root else str(real.relative_to(self.root))
