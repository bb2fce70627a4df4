"""The one NeMo RL release the ``nemo-rl`` plan generator targets, and its key manifest.

NeMo RL has no package on the index (it installs from a checkout with uv), so rlstream
cannot import or run it here. Its config keys come from a committed manifest extracted
from that tag's ``examples/configs`` by ``tools/nemo_rl/extract_config_keys.py``; every key
a plan writes is checked against it. Bumping: re-extract, review the manifest's diff,
re-pin ``NEMO_RL_TAG`` (docs/training.md, "Pinned versions").
"""

from __future__ import annotations

import difflib
import json
from functools import cache
from importlib import resources
from typing import Any

from rlstream.errors import ConfigError

#: the pinned release tag (its commit is in the manifest)
NEMO_RL_TAG = "v0.7.0"
MANIFEST = f"keys_{NEMO_RL_TAG}.json"


class NemoRLKeyError(ConfigError):
    """A config key the pinned NeMo RL release's example configs do not have."""

    code = "nemo_rl_key"


@cache
def manifest() -> dict[str, Any]:
    """The committed manifest of the pinned tag."""
    text = resources.files("rlstream.training.nemo_rl").joinpath(MANIFEST).read_text()
    data: dict[str, Any] = json.loads(text)
    if data.get("nemo_rl_tag") != NEMO_RL_TAG:
        raise ConfigError(
            f"{MANIFEST} was extracted from {data.get('nemo_rl_tag')}, not {NEMO_RL_TAG}"
        )
    return data


@cache
def _keys() -> tuple[frozenset[str], frozenset[str], tuple[str, ...]]:
    data = manifest()
    keys = frozenset(data["keys"])
    prefixes = frozenset(k.rsplit(".", i)[0] for k in keys for i in range(1, k.count(".") + 1))
    return keys, prefixes, tuple(data["open"])


def check_key(key: str, owned: frozenset[str] = frozenset()) -> None:
    """Refuse a dotted key that no example config of the pinned tag has (a leaf, a section,
    or a key below a free-form ``{}`` section); ``owned`` are rlstream's own keys (its
    environment's section)."""
    keys, prefixes, open_ = _keys()
    if key in keys or key in prefixes or key in owned:
        return
    if any(key.startswith(f"{o}.") for o in open_):
        return
    close = difflib.get_close_matches(key, sorted(keys | owned), n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    raise NemoRLKeyError(
        f"NeMo RL {NEMO_RL_TAG} has no config key {key!r} in its example configs{hint}"
    )


def base(method: str) -> dict[str, Any]:
    """The dotted key -> value mapping of the example config a method starts from."""
    bases: dict[str, dict[str, Any]] = manifest()["bases"]
    return dict(bases["ppo" if method == "ppo" else "grpo"])
