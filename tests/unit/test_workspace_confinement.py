"""rlstream.workspace: every path lands inside the root after realpath, or is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rlstream.errors import ConfigError
from rlstream.workspace import Workspace, WorkspaceError

pytestmark = pytest.mark.unit


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Workspace, Path]:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "logs" / "a").mkdir(parents=True)
    outside.mkdir()
    (root / "logs" / "a" / "x.jsonl").write_text("{}\n")
    (root / "logs" / "y.jsonl.gz").write_bytes(b"")
    (outside / "secret.jsonl").write_text("{}\n")
    os.symlink(outside / "secret.jsonl", root / "logs" / "a" / "leak.jsonl")
    os.symlink(root / "logs" / "a" / "x.jsonl", root / "inner.jsonl")  # a link that stays in
    return Workspace(root), outside


def test_paths_inside_resolve_to_real_paths(tree: tuple[Workspace, Path]) -> None:
    ws, _ = tree
    assert ws.path("logs/a/x.jsonl") == ws.root / "logs" / "a" / "x.jsonl"
    assert ws.path(ws.root / "logs") == ws.root / "logs"
    assert ws.path("inner.jsonl") == ws.root / "logs" / "a" / "x.jsonl"
    assert ws.path("new/out.jsonl") == ws.root / "new" / "out.jsonl"  # need not exist
    assert ws.path(".") == ws.root and ws.relative(ws.root / "logs") == "logs"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("/etc/passwd", "path /etc/passwd is outside the workspace"),
        ("..", "'..' is not allowed"),
        ("logs/../logs/a/x.jsonl", "'..' is not allowed"),
        ("logs/a/leak.jsonl", "logs/a/leak.jsonl is a symlink to"),
        ("-", "name a file inside the workspace"),
        ("", "name a file inside the workspace"),
    ],
)
def test_refusals_are_one_line_config_errors(
    tree: tuple[Workspace, Path], value: str, message: str
) -> None:
    ws, _ = tree
    with pytest.raises(WorkspaceError) as err:
        ws.path(value)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert isinstance(err.value, ConfigError) and err.value.code == "outside_workspace"


def test_a_folder_or_glob_cannot_lead_out(tree: tuple[Workspace, Path]) -> None:
    ws, outside = tree
    with pytest.raises(WorkspaceError, match=r"leak\.jsonl is a symlink to"):
        ws.files(["logs"])
    with pytest.raises(WorkspaceError, match="is a symlink to"):
        ws.files(["logs/*/*.jsonl"])
    os.remove(ws.root / "logs" / "a" / "leak.jsonl")
    assert ws.files(["logs"]) == [ws.root / "logs/a/x.jsonl", ws.root / "logs/y.jsonl.gz"]
    assert ws.files(["logs/*/*.jsonl"]) == [ws.root / "logs/a/x.jsonl"]
    with pytest.raises(ConfigError, match="no file matches"):
        ws.files(["nothing*.jsonl"])
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.files([str(outside / "*.jsonl")])


def test_the_root_must_be_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a folder"):
        Workspace(tmp_path / "missing")
