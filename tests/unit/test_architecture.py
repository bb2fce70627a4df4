"""The import rules that keep the architecture visible from the tree.

* the library (``shared/rlstream``) never imports a service (``rlstream.services``);
* one service never imports another service (they talk only through events);
  the CLI is the one deployable allowed to compose the others' library calls, but it, too,
  may not import another service's modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "shared" / "rlstream"
SERVICES = ROOT / "services" / "rlstream" / "services"

pytestmark = pytest.mark.unit


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _service_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == ["rlstream", "services"] and len(parts) > 2:
        return parts[2]
    return None


def test_library_never_imports_a_service() -> None:
    offenders = [
        f"{p.relative_to(ROOT)} imports {m}"
        for p in LIBRARY.rglob("*.py")
        for m in _imports(p)
        if m == "rlstream.services" or m.startswith("rlstream.services.")
    ]
    assert not offenders, "\n".join(offenders)


def test_services_do_not_import_each_other() -> None:
    offenders = []
    for service_dir in (d for d in SERVICES.iterdir() if d.is_dir() and d.name != "__pycache__"):
        for p in service_dir.rglob("*.py"):
            for m in _imports(p):
                other = _service_of(m)
                if other is not None and other != service_dir.name:
                    offenders.append(f"{p.relative_to(ROOT)} imports {m}")
    assert not offenders, "\n".join(offenders)


def test_rule_detects_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from rlstream.services.grader import app\nimport rlstream.services.curator\n")
    mods = _imports(bad)
    assert _service_of("rlstream.services.grader.app") == "grader"
    assert {"rlstream.services.grader", "rlstream.services.curator"} <= mods


def test_library_is_a_namespace_split_across_two_roots() -> None:
    import rlstream

    roots = {Path(p).resolve() for p in rlstream.__path__}
    assert (ROOT / "shared" / "rlstream").resolve() in roots
    assert (ROOT / "services" / "rlstream").resolve() in roots
