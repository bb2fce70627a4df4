"""Extract NeMo RL's config keys from a checkout's example YAMLs into rlstream's manifest.

NeMo RL has no package on the index, so rlstream's ``nemo-rl`` plan generator checks every
key it writes against a committed manifest instead of importing NeMo RL. This reads the
``examples/configs/**/*.yaml`` (recipes included) of a checkout at a release tag (no code runs, YAML is
only parsed) and writes ``keys_<tag>.json``:

- ``keys``: every dotted leaf key of any example config (lists and scalars are leaves);
- ``open``: dotted keys whose example value is an empty mapping (``vllm_kwargs: {}``):
  free-form, so any key below them is accepted;
- ``bases``: for the top-level configs the plan generator starts from, their full dotted
  key -> value mapping (interpolations such as ``${policy.max_total_sequence_length}``
  kept as text), so the plan is a complete config that needs no ``defaults:`` path;
- ``sources``: each file read with its sha256, and the tag and commit.

Usage (from rlstream's repository root)::

    git -C /path/to/RL checkout v0.7.0
    python tools/nemo_rl/extract_config_keys.py /path/to/RL --tag v0.7.0 \\
        --out shared/rlstream/training/nemo_rl/keys_v0.7.0.json

Bumping the pin: extract the new tag, review ``git diff`` of the manifest (removed keys
are what the plan generator may still write), update ``NEMO_RL_TAG`` in
``rlstream/training/nemo_rl/pin.py``, run the nemo-rl tests.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

#: the example configs the plan generator starts from (method -> file)
BASES = {"grpo": "grpo_math_1B.yaml", "ppo": "ppo_math_1B.yaml"}
CONFIG_DIR = "examples/configs"


def flatten(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) for every leaf; an empty mapping is a leaf (``{}``)."""
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from flatten(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, node


def extract(checkout: Path, tag: str, commit: str | None = None) -> dict[str, Any]:
    """The manifest for the example configs under ``checkout`` (at ``tag``)."""
    folder = checkout / CONFIG_DIR
    files = sorted(folder.rglob("*.yaml"))
    if not files:
        raise SystemExit(f"{folder}: no example configs (is this a NeMo RL checkout?)")
    keys: set[str] = set()
    open_keys: set[str] = set()
    sources: dict[str, str] = {}
    bases: dict[str, dict[str, Any]] = {}
    for path in files:
        raw = path.read_bytes()
        name = path.relative_to(folder).as_posix()
        sources[name] = hashlib.sha256(raw).hexdigest()
        data = yaml.safe_load(raw) or {}
        data.pop("defaults", None)  # inheritance, not a key
        flat = dict(flatten(data))
        keys.update(flat)
        open_keys.update(k for k, v in flat.items() if v == {})
        for method, base in BASES.items():
            if name == base:
                bases[method] = flat
    missing = sorted(set(BASES.values()) - set(sources))
    if missing:
        raise SystemExit(f"{folder}: the base configs {missing} are missing")
    return {
        "nemo_rl_tag": tag,
        "commit": commit or _commit(checkout),
        "config_dir": CONFIG_DIR,
        "sources": sources,
        "keys": sorted(keys),
        "open": sorted(open_keys),
        "bases": {m: bases[m] for m in sorted(bases)},
    }


def _commit(checkout: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a NeMo RL checkout at the release tag")
    parser.add_argument("--tag", required=True, help="the release tag checked out, e.g. v0.7.0")
    parser.add_argument("--out", type=Path, required=True, help="the manifest to write")
    parser.add_argument("--commit", help="the tag's commit, when the checkout is not a git clone")
    args = parser.parse_args(argv)
    manifest = extract(args.checkout, args.tag, args.commit)
    args.out.write_text(json.dumps(manifest, indent=1, sort_keys=True, default=str) + "\n")
    print(f"{args.out}: {len(manifest['keys'])} keys from {len(manifest['sources'])} configs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
