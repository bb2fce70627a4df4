"""The committed flag manifest, and argv validation against it.

argparse in the OpenRLHF CLI would reject an unknown flag only once the pod holds its
GPUs, and it silently accepts unambiguous prefixes (``--actor.adam.l`` for
``--actor.adam.lr``). Here every flag must be spelled exactly as the pinned release
defines it, take the number of values its ``nargs``/``action`` says, convert with its
``type`` and be one of its ``choices``. Any miss is a :class:`FlagError` before launch.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

from rlstream.errors import ConfigError
from rlstream.training.openrlhf.pin import OPENRLHF_VERSION

#: the CLIs the adapter drives: GRPO (train_ppo_ray), SFT and DPO (DeepSpeed)
PPO, SFT, DPO = "train_ppo_ray", "train_sft", "train_dpo"
CLIS = (PPO, SFT, DPO)
_ZERO_ARG = ("store_true", "store_false", "store_const", "count")
_CONVERT = {"int": int, "float": float, "str": str, None: str}


class FlagError(ConfigError):
    """An argv for OpenRLHF uses a flag or value the pinned release does not accept."""

    code = "openrlhf_flag"


def manifest_file(cli: str) -> str:
    return f"flags_{cli}_{OPENRLHF_VERSION}.json"


@cache
def load_manifest(cli: str = PPO) -> dict[str, Any]:
    """A CLI's manifest, committed next to this module (tools/openrlhf/extract_flags.py)."""
    if cli not in CLIS:
        raise ConfigError(f"no flag manifest for openrlhf.cli.{cli}")
    text = resources.files(__package__).joinpath(manifest_file(cli)).read_text()
    data: dict[str, Any] = json.loads(text)
    if data.get("openrlhf_version") != OPENRLHF_VERSION:
        raise ConfigError(f"{manifest_file(cli)} is for {data.get('openrlhf_version')}")
    return data


def flags(cli: str = PPO) -> dict[str, dict[str, Any]]:
    result: dict[str, dict[str, Any]] = load_manifest(cli)["flags"]
    return result


#: what argparse (3.11/3.12) reads as a negative number, i.e. a value, not an option
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _is_flag(token: str) -> bool:
    """As argparse splits tokens: "-5" and "-.5" are values; "-1e5" or "-inf" would be
    read as (unknown) options, so they are flags here too and get refused."""
    return token.startswith("-") and token != "-" and not _NEGATIVE_NUMBER.match(token)


def _arity(spec: dict[str, Any]) -> tuple[int, int | None]:
    if spec["action"] in _ZERO_ARG:
        return 0, 0
    nargs = spec["nargs"]
    if nargs is None:
        return 1, 1
    if isinstance(nargs, int):
        return nargs, nargs
    return {"?": (0, 1), "*": (0, None), "+": (1, None)}[nargs]


def _unknown(flag: str, known: dict[str, dict[str, Any]], cli: str) -> FlagError:
    what = f"{flag} is not an OpenRLHF {OPENRLHF_VERSION} flag of openrlhf.cli.{cli}"
    matches = sorted(k for k in known if k.startswith(flag))
    if matches:
        return FlagError(
            f"{what} (argparse would read it as an abbreviation of "
            f"{', '.join(matches[:3])}); spell the flag in full"
        )
    return FlagError(what)


def _check_value(flag: str, spec: dict[str, Any], value: str) -> Any:
    convert = _CONVERT.get(spec["type"])
    if convert is None:
        raise FlagError(f"{flag}: the manifest's type {spec['type']!r} is not checkable")
    try:
        typed = convert(value)
    except ValueError as exc:
        raise FlagError(f"{flag}: {value!r} is not a valid {spec['type']}") from exc
    if isinstance(typed, float) and not math.isfinite(typed):
        raise FlagError(f"{flag}: {value!r} is not a finite number")
    if spec["choices"] is not None and typed not in spec["choices"]:
        raise FlagError(f"{flag}: {value!r} is not one of {spec['choices']}")
    return typed


def split_args(argv: Sequence[str]) -> list[tuple[str, list[str]]]:
    """[(flag, values)] with ``--flag=value`` split; values are every non-flag token after it."""
    out: list[tuple[str, list[str]]] = []
    for token in argv:
        if _is_flag(token):
            flag, eq, value = token.partition("=")
            out.append((flag, [value] if eq else []))
        elif not out:
            raise FlagError(f"unexpected value {token!r} before any flag")
        else:
            out[-1][1].append(token)
    return out


def parse_args(argv: Sequence[str], cli: str = PPO) -> dict[str, Any]:
    """Validate ``argv`` (without the launcher part) for ``openrlhf.cli.<cli>``; returns
    dest -> typed value."""
    known = flags(cli)
    parsed: dict[str, Any] = {}
    seen: set[str] = set()
    for flag, values in split_args(argv):
        spec = known.get(flag)
        if spec is None or not flag.startswith("--"):
            raise _unknown(flag, known, cli)
        if flag in seen:
            raise FlagError(f"{flag} is given twice")
        seen.add(flag)
        low, high = _arity(spec)
        if len(values) < low or (high is not None and len(values) > high):
            want = f"{low}" if low == high else f"{low}..{high if high is not None else 'n'}"
            raise FlagError(f"{flag} takes {want} value(s), got {len(values)}: {values}")
        if spec["action"] in _ZERO_ARG:
            parsed[spec["dest"]] = spec["action"] != "store_false"
            continue
        typed = [_check_value(flag, spec, v) for v in values]
        single = spec["nargs"] is None or spec["nargs"] == "?"
        parsed[spec["dest"]] = (typed[0] if typed else spec["const"]) if single else typed
    return parsed


def effective(parsed: dict[str, Any], dest: str, cli: str = PPO) -> Any:
    """The value argparse would give ``dest``: the parsed one, else the manifest default."""
    if dest in parsed:
        return parsed[dest]
    for spec in flags(cli).values():
        if spec["dest"] == dest:
            return spec["default"]
    raise ConfigError(f"no OpenRLHF flag has dest {dest!r}")
