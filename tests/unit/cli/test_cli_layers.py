"""CLI command modules parse arguments and print; the loops are the library's
(``rlstream.pipeline``). So no command module imports another one: a command that needs
another's work calls the library function both use."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

CLI = Path(__file__).resolve().parents[3] / "services" / "rlstream" / "services" / "cli"


def _imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level:  # from .x import y / from . import x_cmd
                mod = "rlstream.services.cli" + ("." + mod if mod else "")
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_no_command_module_imports_another() -> None:
    commands = sorted(CLI.glob("*_cmd.py"))
    assert len(commands) >= 8
    offenders = [
        f"{p.name} imports {m}"
        for p in commands
        for m in sorted(_imported(p))
        if m.startswith("rlstream.services.cli.") and m.split(".")[3].endswith("_cmd")
    ]
    assert offenders == []


def test_improve_run_and_demo_run_the_library_loops() -> None:
    assert "rlstream.pipeline.batch.run_batch" in _imported(CLI / "improve_cmd.py")
    demo = _imported(CLI / "demo_cmd.py")
    assert {"rlstream.pipeline.batch.run_batch", "rlstream.pipeline.run_demo"} <= demo
