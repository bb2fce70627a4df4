"""Extract an OpenRLHF CLI's flags from its source, without importing it.

The CLI modules import ray, vLLM and flash-attn at import time (none of which installs
without CUDA), so the manifest comes from an AST walk of ``add_argument`` calls. The
``for prefix in ("actor", "critic"):`` loop that stamps out per-model optimiser flags is
expanded by binding the loop variable while evaluating f-strings and conditionals.
Values that are not plain literals (``float("inf")``, ``datetime.now()...``) are kept as
their source text under ``{"expr": ...}`` so the manifest stays exact JSON.
"""

from __future__ import annotations

import ast
import hashlib
import math
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rlstream.errors import ConfigError

#: the CLI module that ``python3 -m openrlhf.cli.train_ppo_ray`` runs
PPO_MODULE = "openrlhf/cli/train_ppo_ray.py"


def module_path(cli: str) -> str:
    """``train_sft`` -> ``openrlhf/cli/train_sft.py`` (its path inside the wheel)."""
    return f"openrlhf/cli/{cli}.py"


_KEYWORDS = ("dest", "type", "default", "choices", "action", "nargs", "const", "required")


class _Unevaluable(Exception):
    """A node the small evaluator does not reduce to a literal."""


def _eval(node: ast.expr, env: Mapping[str, Any]) -> Any:
    """Literal evaluation plus loop variables, f-strings, ``a if x == y else b``, -x."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise _Unevaluable(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.FormattedValue):
                if v.format_spec is not None or v.conversion != -1:
                    raise _Unevaluable("formatted value")
                parts.append(str(_eval(v.value, env)))
            else:
                parts.append(str(_eval(v, env)))
        return "".join(parts)
    if isinstance(node, ast.Tuple | ast.List):
        return [_eval(e, env) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, env)
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, env) else node.orelse, env)
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.Eq | ast.NotEq)
    ):
        same = _eval(node.left, env) == _eval(node.comparators[0], env)
        return same if isinstance(node.ops[0], ast.Eq) else not same
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("int", "float")
        and len(node.args) == 1
        and not node.keywords
    ):
        value = _eval(node.args[0], env)
        return int(value) if node.func.id == "int" else float(value)
    raise _Unevaluable(ast.dump(node))


def _json_value(node: ast.expr, env: Mapping[str, Any]) -> Any:
    try:
        value = _eval(node, env)
    except _Unevaluable:
        return {"expr": ast.unparse(node)}
    if isinstance(value, float) and not math.isfinite(value):
        return {"expr": ast.unparse(node)}
    return value


def _type_name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else ast.unparse(node)


def _flag_entry(call: ast.Call, env: Mapping[str, Any]) -> tuple[list[str], dict[str, Any]]:
    names = [str(_eval(a, env)) for a in call.args]
    kw = {k.arg: k.value for k in call.keywords if k.arg is not None}
    entry: dict[str, Any] = {}
    for key in _KEYWORDS:
        if key not in kw:
            entry[key] = None
        elif key == "type":
            entry[key] = _type_name(kw[key])
        else:
            entry[key] = _json_value(kw[key], env)
    long = next((n for n in names if n.startswith("--")), names[0])
    if entry["dest"] is None:
        entry["dest"] = long.lstrip("-").replace("-", "_")
    if entry["action"] in ("store_true", "store_false") and entry["default"] is None:
        entry["default"] = entry["action"] == "store_false"  # argparse's own default
    return names, entry


def _walk(body: list[ast.stmt], env: dict[str, Any]) -> Iterator[tuple[ast.Call, dict[str, Any]]]:
    """Every add_argument call in source order, with loop variables bound."""
    for stmt in body:
        if (
            isinstance(stmt, ast.For)
            and isinstance(stmt.target, ast.Name)
            and isinstance(stmt.iter, ast.Tuple | ast.List)
        ):
            for value in _eval(stmt.iter, env):
                yield from _walk(stmt.body, {**env, stmt.target.id: value})
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from _walk(inner, env)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument":
                yield call, env


def extract_flags(source: str) -> dict[str, dict[str, Any]]:
    """``{"--flag": {dest, type, default, choices, action, nargs, const, required}}``."""
    tree = ast.parse(source)
    flags: dict[str, dict[str, Any]] = {}
    for call, env in _walk(tree.body, {}):
        names, entry = _flag_entry(call, env)
        for name in names:
            if name in flags:
                raise ConfigError(f"flag {name} is defined twice in the OpenRLHF source")
            flags[name] = entry
    return dict(sorted(flags.items()))


def build_manifest(source: str, version: str, module: str = PPO_MODULE) -> dict[str, Any]:
    """The committed manifest: version, source path and hash, and every flag."""
    flags = extract_flags(source)
    return {
        "openrlhf_version": version,
        "module": module,
        "source_sha256": hashlib.sha256(source.encode()).hexdigest(),
        "flag_count": len(flags),
        "flags": flags,
    }


def source_from_wheel(wheel: Path, module: str = PPO_MODULE) -> str:
    """A module's source out of the wheel (it lies under ``openrlhf-X.data/purelib/``)."""
    with zipfile.ZipFile(wheel) as zf:
        hits = [n for n in zf.namelist() if n == module or n.endswith(f"/purelib/{module}")]
        if len(hits) != 1:
            raise ConfigError(f"{wheel.name}: expected one {module}, found {hits}")
        return zf.read(hits[0]).decode()
