"""Extract every config key ``verl.trainer.main_ppo`` accepts from the release's own YAML.

``main_ppo`` composes ``ppo_trainer.yaml`` with Hydra in struct mode, so an override of a
key that is not in the composed config fails, but only once the pod holds its GPUs. The
wheel ships verl's own flattened composition, ``_generated_ppo_trainer.yaml`` (written by
its ``scripts/print_cfg.py``); the one key it leaves out, the ``_global_`` defaults-group
choice ``model_engine``, is read from the group file the defaults list selects. A test
composes the same files with Hydra itself and checks the key sets are equal.
"""

from __future__ import annotations

import hashlib
import math
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from rlstream.errors import ConfigError

CONFIG_DIR = "verl/trainer/config"
ROOT = f"{CONFIG_DIR}/ppo_trainer.yaml"
GENERATED = f"{CONFIG_DIR}/_generated_ppo_trainer.yaml"
_GLOBAL = "# @package _global_"


def type_of(value: Any) -> str:
    """The manifest's type name for a default value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "dict"
    if value == "???":
        return "missing"
    if isinstance(value, str) and "${" in value:
        return "interpolation"
    return "str"


def flatten(tree: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, leaf value); an empty mapping is a leaf (a dict-valued key)."""
    if isinstance(tree, dict) and tree:
        for key, value in tree.items():
            yield from flatten(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, tree


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return {"expr": repr(value)}
    return value


def global_groups(files: Mapping[str, str]) -> list[str]:
    """The group files ``ppo_trainer.yaml``'s defaults list selects that are ``_global_``."""
    root = yaml.safe_load(files[ROOT])
    out = []
    for entry in root.get("defaults", []):
        if not isinstance(entry, dict) or len(entry) != 1:
            continue
        ((group, option),) = entry.items()
        path = f"{CONFIG_DIR}/{group}/{option}.yaml"
        if "@" in str(group) or "${" in str(option) or path not in files:
            continue
        if files[path].lstrip().startswith(_GLOBAL):
            out.append(path)
    return out


def build_manifest(files: Mapping[str, str], version: str) -> dict[str, Any]:
    """The committed manifest: version, the source files and their sha256, every key with
    its type and default."""
    used = [GENERATED, ROOT, *global_groups(files)]
    keys: dict[str, dict[str, Any]] = {}
    for path in (GENERATED, *used[2:]):
        for key, value in flatten(yaml.safe_load(files[path])):
            if key in keys:
                raise ConfigError(f"{path}: key {key} is defined twice")
            keys[key] = {"type": type_of(value), "default": _json_default(value)}
    return {
        "verl_version": version,
        "sources": {p: hashlib.sha256(files[p].encode()).hexdigest() for p in used},
        "key_count": len(keys),
        "keys": dict(sorted(keys.items())),
    }


def config_files(wheel: Path) -> dict[str, str]:
    """Every YAML file under ``verl/trainer/config/`` in the wheel, by path."""
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.startswith(CONFIG_DIR) and n.endswith(".yaml")]
        files = {n: zf.read(n).decode() for n in names}
    for need in (ROOT, GENERATED):
        if need not in files:
            raise ConfigError(f"{wheel.name}: no {need}")
    return files
