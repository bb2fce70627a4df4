"""The committed key manifest, and override validation against it.

Hydra refuses an unknown key in ``main_ppo``'s struct config only once the pod holds its
GPUs, and OmegaConf accepts any type for any key of a plain-YAML config (verl's dataclass
conversion then fails mid-startup). Here every override must name a key of the pinned
release exactly, add or delete none (``+key``, ``++key``, ``~key``), and carry a value of
the key's type. Any miss is an :class:`OverrideError` before launch.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

from rlstream.errors import ConfigError
from rlstream.training.verl.pin import VERL_VERSION

MANIFEST = f"config_keys_{VERL_VERSION}.json"
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
#: a string Hydra reads back unchanged without quotes
_BARE = re.compile(r"^[A-Za-z0-9_/.@%+-]+$")
_UNSET = object()


class OverrideError(ConfigError):
    """An override for verl uses a key or value the pinned release does not accept."""

    code = "verl_override"


@cache
def load_manifest() -> dict[str, Any]:
    """The manifest committed next to this module (tools/verl/extract_config_keys.py)."""
    data: dict[str, Any] = json.loads(resources.files(__package__).joinpath(MANIFEST).read_text())
    if data.get("verl_version") != VERL_VERSION:
        raise ConfigError(f"{MANIFEST} is for verl {data.get('verl_version')}")
    return data


def keys() -> dict[str, dict[str, Any]]:
    result: dict[str, dict[str, Any]] = load_manifest()["keys"]
    return result


def parse_value(raw: str) -> Any:
    """A Hydra override value: null, true/false, int, float, quoted or bare string, or a
    list/dict/interpolation kept as its text (typed by its brackets)."""
    low = raw.strip().lower()
    if low == "null":
        return None
    if low in ("true", "false"):
        return low == "true"
    if low in ("inf", "+inf", "-inf", "nan", "+nan", "-nan"):  # Hydra reads these as floats
        return float(low)
    if _INT.match(raw):
        return int(raw)
    if _FLOAT.match(raw):
        return float(raw)
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return raw


def _kind(raw: str, value: Any) -> str:
    if isinstance(value, str) and value == raw:
        if raw.startswith("${"):
            return "interpolation"
        if raw.startswith("["):
            return "list"
        if raw.startswith("{"):
            return "dict"
    return type(value).__name__


_ACCEPTS = {
    "bool": ("bool",),
    "int": ("int",),
    "float": ("int", "float"),
    "str": ("str",),
    "list": ("list",),
    "dict": ("dict",),
}


def check_value(key: str, raw: str) -> Any:
    """The typed value of ``key=raw``; refused when its type is not the key's."""
    spec = keys()[key]
    value = parse_value(raw)
    kind = _kind(raw, value)
    if isinstance(value, float) and not math.isfinite(value):
        raise OverrideError(f"{key}: {raw!r} is not a finite number")
    accepts = _ACCEPTS.get(spec["type"])  # null / interpolation / missing: any type
    if accepts is not None and kind not in (*accepts, "interpolation"):
        raise OverrideError(f"{key}: {raw!r} is a {kind}, the key is a {spec['type']}")
    return value


def split_override(item: str) -> tuple[str, str]:
    """``key=value`` -> (key, value); additions and deletions are refused."""
    key, eq, raw = item.partition("=")
    if key.startswith(("+", "~")):
        raise OverrideError(
            f"{item!r}: adding or deleting keys ({key[:2]}...) is refused; set an existing key"
        )
    if not eq or not key:
        raise OverrideError(f"{item!r} is not a key=value override")
    return key, raw


def unknown(key: str) -> OverrideError:
    what = f"{key} is not a key of verl {VERL_VERSION}'s ppo_trainer config"
    near = difflib.get_close_matches(key, list(keys()), n=3, cutoff=0.8)
    return OverrideError(f"{what} (did you mean {', '.join(near)}?)" if near else what)


def parse_overrides(overrides: Sequence[str]) -> dict[str, Any]:
    """Validate ``key=value`` overrides; returns key -> typed value."""
    known = keys()
    parsed: dict[str, Any] = {}
    for item in overrides:
        key, raw = split_override(item)
        if key not in known:
            raise unknown(key)
        if key in parsed:
            raise OverrideError(f"{key} is given twice")
        parsed[key] = check_value(key, raw)
    return parsed


def _interpolated(value: str, key: str, parsed: dict[str, Any], depth: int) -> Any:
    """``${a.b}`` / ``${oc.select:a.b,default}`` (``.x``: a sibling), as OmegaConf would."""
    inner = value[2:-1]
    fallback: Any = _UNSET
    if inner.startswith("oc.select:"):
        inner, _, rest = inner[len("oc.select:") :].partition(",")
        fallback = parse_value(rest.strip()) if rest else None
    target = inner.strip()
    if target.startswith("."):
        target = key.rsplit(".", 1)[0] + target
    if target in keys():
        return effective(parsed, target, depth + 1)
    if fallback is _UNSET:
        raise ConfigError(f"{key}: cannot resolve {value}")
    return fallback


def effective(parsed: dict[str, Any], key: str, depth: int = 0) -> Any:
    """The value ``key`` will have: the override, else the manifest default, with simple
    interpolations resolved."""
    if depth > 8:
        raise ConfigError(f"{key}: interpolation too deep")
    value = parsed[key] if key in parsed else keys()[key]["default"]
    if isinstance(value, str) and value.startswith("${") and value.endswith("}"):
        return _interpolated(value, key, parsed, depth)
    return value


def render(value: Any) -> str:
    """A value as Hydra override text (strings quoted unless they read back unchanged)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)  # 1.0 stays a float: verl's dataclass fields are typed
    if isinstance(value, list | tuple):
        return "[" + ",".join(render(v) for v in value) + "]"
    text = str(value)
    if _BARE.match(text) and parse_value(text) == text:
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
