"""The import rules that keep the architecture visible from the tree.

* the library (``shared/rlstream``) never imports a service (``rlstream.services``);
* one service never imports another service (they talk only through events);
  the CLI is the one deployable allowed to compose the others' library calls, but it, too,
  may not import another service's modules;
* nothing shipped (library or services) imports the test kit (rlstream_testkit: the server
  harness, PII generators), which is not in the wheel;
* no two packages import each other, directly or around a longer loop, counting every
  import statement wherever it stands (a lazy import inside a function is still a cycle:
  it only moves the failure from import time to the first call).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "shared" / "rlstream"
SERVICES = ROOT / "services" / "rlstream" / "services"

pytestmark = pytest.mark.unit


def _module_name(path: Path, top: Path) -> str:
    """Dotted name of ``path``, where ``top`` is the directory that holds the ``rlstream`` dir."""
    parts = list(path.relative_to(top).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, top: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved against its package."""
    module = _module_name(path, top)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def _service_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == ["rlstream", "services"] and len(parts) > 2:
        return parts[2]
    return None


def library_violations(library: Path) -> list[str]:
    """Imports of ``rlstream.services`` from the library tree rooted at ``library``."""
    top = library.parent
    return [
        f"{p.relative_to(top)} imports {m}"
        for p in sorted(library.rglob("*.py"))
        for m in sorted(_imports(p, top))
        if m == "rlstream.services" or m.startswith("rlstream.services.")
    ]


def service_violations(services: Path) -> list[str]:
    """Imports of one service's modules from another, in the tree rooted at ``services``."""
    top = services.parent.parent
    offenders = []
    for service_dir in sorted(d for d in services.iterdir() if d.is_dir()):
        if service_dir.name == "__pycache__":
            continue
        for p in sorted(service_dir.rglob("*.py")):
            for m in sorted(_imports(p, top)):
                other = _service_of(m)
                if other is not None and other != service_dir.name:
                    offenders.append(f"{p.relative_to(top)} imports {m}")
    return offenders


TESTKIT = "rlstream_testkit"


def shipped_imports_of_test_kit(*roots: Path) -> list[str]:
    """Imports of the test kit from shipped code under each roots entry (a rlstream dir)."""
    offenders = []
    for root in roots:
        top = root.parent
        for p in sorted(root.rglob("*.py")):
            for m in sorted(_imports(p, top)):
                if m == TESTKIT or m.startswith(TESTKIT + "."):
                    offenders.append(f"{p.relative_to(top)} imports {m}")
    return offenders


def test_shipped_code_never_imports_the_test_kit() -> None:
    offenders = shipped_imports_of_test_kit(LIBRARY, SERVICES.parent)
    assert not offenders, "\n".join(offenders)


def test_test_kit_rule_catches_planted_violations(tmp_path: Path) -> None:
    lib = tmp_path / "shared" / "rlstream"
    _tree(
        tmp_path,
        {
            "shared/rlstream/ok.py": "import rlstream_testkitten\n",
            "shared/rlstream/pii/bad.py": "from rlstream_testkit.pii_synth import generate\n",
            "shared/rlstream/bad2.py": "import rlstream_testkit\n",
        },
    )
    assert shipped_imports_of_test_kit(lib) == [
        "rlstream/bad2.py imports rlstream_testkit",
        "rlstream/pii/bad.py imports rlstream_testkit.pii_synth",
        "rlstream/pii/bad.py imports rlstream_testkit.pii_synth.generate",
    ]


def test_library_never_imports_a_service() -> None:
    offenders = library_violations(LIBRARY)
    assert not offenders, "\n".join(offenders)


def test_services_do_not_import_each_other() -> None:
    offenders = service_violations(SERVICES)
    assert not offenders, "\n".join(offenders)


def test_the_rules_run_over_the_real_tree() -> None:
    # Guards against a rule that passes because it looked at nothing.
    top = LIBRARY.parent
    lib_imports = set().union(*(_imports(p, top) for p in LIBRARY.rglob("*.py")))
    assert "rlstream.errors" in lib_imports
    grader = SERVICES / "grader"
    svc_imports = set().union(*(_imports(p, SERVICES.parent.parent) for p in grader.rglob("*.py")))
    assert "rlstream.services.grader.handler" in svc_imports


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)


def test_rules_catch_absolute_and_relative_violations(tmp_path: Path) -> None:
    lib = tmp_path / "shared" / "rlstream"
    svc = tmp_path / "services" / "rlstream" / "services"
    _tree(
        tmp_path,
        {
            "shared/rlstream/__init__.py": "",
            "shared/rlstream/ok.py": "from . import errors\nfrom .x import y\n",
            "shared/rlstream/bad_abs.py": "import rlstream.services.grader\n",
            "shared/rlstream/sub/__init__.py": "",
            "shared/rlstream/sub/bad_rel.py": "from ..services.curator import app\n",
            "services/rlstream/services/__init__.py": "",
            "services/rlstream/services/grader/__init__.py": "from . import app\n",
            "services/rlstream/services/grader/app.py": (
                "from .handler import h\nfrom rlstream.services.grader.x import y\n"
            ),
            "services/rlstream/services/grader/bad.py": "from ..curator.app import run\n",
            "services/rlstream/services/cli/bad.py": "from rlstream.services.ingest import app\n",
        },
    )
    assert library_violations(lib) == [
        "rlstream/bad_abs.py imports rlstream.services.grader",
        "rlstream/sub/bad_rel.py imports rlstream.services.curator",
        "rlstream/sub/bad_rel.py imports rlstream.services.curator.app",
    ]
    assert service_violations(svc) == [
        "rlstream/services/cli/bad.py imports rlstream.services.ingest",
        "rlstream/services/cli/bad.py imports rlstream.services.ingest.app",
        "rlstream/services/grader/bad.py imports rlstream.services.curator.app",
        "rlstream/services/grader/bad.py imports rlstream.services.curator.app.run",
    ]


def test_library_is_a_namespace_split_across_two_roots() -> None:
    import rlstream

    roots = {Path(p).resolve() for p in rlstream.__path__}
    assert (ROOT / "shared" / "rlstream").resolve() in roots
    assert (ROOT / "services" / "rlstream").resolve() in roots


def _package_of(module: str) -> str:
    """``rlstream.<package>``, or ``rlstream.services.<service>`` for a deployable."""
    parts = module.split(".")
    return ".".join(parts[: 3 if parts[:2] == ["rlstream", "services"] else 2])


def private_import_violations(root: Path, top: Path) -> list[str]:
    """Imports of another package's underscore module or name (``rlstream.formats._common``
    from ``rlstream.ingest``): what one package shares with others is public, by name."""
    offenders: set[str] = set()
    for p in sorted(root.rglob("*.py")):
        mine = _package_of(_module_name(p, top))
        for m in _imports(p, top):
            parts = m.split(".")
            private = next(
                (i for i, x in enumerate(parts) if x.startswith("_") and not x.startswith("__")),
                None,
            )
            if parts[0] == "rlstream" and private is not None and _package_of(m) != mine:
                offenders.add(f"{p.relative_to(top)} imports {'.'.join(parts[: private + 1])}")
    return sorted(offenders)


def test_no_package_imports_another_packages_private_modules() -> None:
    offenders = [
        *private_import_violations(LIBRARY, LIBRARY.parent),
        *private_import_violations(SERVICES, SERVICES.parent.parent),
    ]
    assert not offenders, "\n".join(offenders)


def test_private_import_rule_catches_planted_violations(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "shared/rlstream/formats/__init__.py": "",
            "shared/rlstream/formats/_common.py": "",
            "shared/rlstream/formats/openai.py": (
                "from rlstream.formats._common import x\nfrom ._common import y\n"
            ),
            "shared/rlstream/formats/sub/deep.py": "from .._common import z\n",
            "shared/rlstream/ingest/__init__.py": "",
            "shared/rlstream/ingest/bad_abs.py": "from rlstream.formats._common import x\n",
            "shared/rlstream/ingest/bad_rel.py": "from ..formats import _common\n",
            "shared/rlstream/ingest/bad_name.py": "from rlstream.formats.openai import _helper\n",
            "shared/rlstream/ingest/ok.py": "from rlstream.formats import parse\nimport __future__\n",
            "services/rlstream/services/grader/_util.py": "",
            "services/rlstream/services/grader/app.py": "from ._util import u\n",
            "services/rlstream/services/grader/bad.py": "import rlstream.rewards._common\n",
        },
    )
    lib = tmp_path / "shared" / "rlstream"
    svc = tmp_path / "services" / "rlstream" / "services"
    assert private_import_violations(lib, lib.parent) == [
        "rlstream/ingest/bad_abs.py imports rlstream.formats._common",
        "rlstream/ingest/bad_name.py imports rlstream.formats.openai._helper",
        "rlstream/ingest/bad_rel.py imports rlstream.formats._common",
    ]
    assert private_import_violations(svc, svc.parent.parent) == [
        "rlstream/services/grader/bad.py imports rlstream.rewards._common",
    ]


def package_graph(*roots: tuple[Path, Path]) -> dict[str, dict[str, set[str]]]:
    """``package -> imported package -> the files that import it``, over every import
    statement (module level, inside functions, under ``TYPE_CHECKING``), for each
    ``(root, top)`` pair."""
    graph: dict[str, dict[str, set[str]]] = {}
    for root, top in roots:
        for p in sorted(root.rglob("*.py")):
            mine = _package_of(_module_name(p, top))
            for m in _imports(p, top):
                theirs = _package_of(m)
                if m.startswith("rlstream.") and "." in theirs and theirs != mine:
                    graph.setdefault(mine, {}).setdefault(theirs, set()).add(
                        str(p.relative_to(top))
                    )
    return graph


def import_cycles(graph: dict[str, dict[str, set[str]]]) -> list[str]:
    """One line per package cycle (a strongly connected set of packages, Tarjan), with
    the files behind each edge inside it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    comps: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    lines = []
    for comp in sorted(comps):
        edges = [
            f"{a} -> {b} ({', '.join(sorted(graph[a][b]))})"
            for a in comp
            for b in comp
            if b in graph.get(a, {})
        ]
        lines.append("cycle: " + "; ".join(edges))
    return lines


def test_no_package_import_cycles() -> None:
    cycles = import_cycles(
        package_graph((LIBRARY, LIBRARY.parent), (SERVICES, SERVICES.parent.parent))
    )
    assert not cycles, "\n".join(cycles)


def test_cycle_rule_sees_function_level_imports(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "shared/rlstream/a/__init__.py": "from rlstream.b import x\n",
            "shared/rlstream/b/__init__.py": "",
            "shared/rlstream/b/lazy.py": "def f():\n    from rlstream.c.m import y\n",
            "shared/rlstream/c/m.py": "def g():\n    import rlstream.a\n",
            "shared/rlstream/d/ok.py": "from rlstream.a import z\n",
        },
    )
    lib = tmp_path / "shared" / "rlstream"
    assert import_cycles(package_graph((lib, lib.parent))) == [
        "cycle: rlstream.a -> rlstream.b (rlstream/a/__init__.py); "
        "rlstream.b -> rlstream.c (rlstream/b/lazy.py); "
        "rlstream.c -> rlstream.a (rlstream/c/m.py)"
    ]
    (lib / "c" / "m.py").write_text("def g():\n    pass\n")
    assert import_cycles(package_graph((lib, lib.parent))) == []
