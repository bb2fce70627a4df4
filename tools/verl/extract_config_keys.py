"""Regenerate the verl config-key manifest from the pinned release's wheel (never imported).

    python tools/verl/extract_config_keys.py            # rewrite the committed manifest
    python tools/verl/extract_config_keys.py --check    # exit 1 if it differs
    python tools/verl/extract_config_keys.py --wheel path/to/verl-0.9.1-py3-none-any.whl

Bump ``rlstream.training.verl.pin.VERL_VERSION`` and docker/Dockerfile.gpu's
``ARG VERL_VERSION`` together, then run this and review the diff of keys.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rlstream.training.openrlhf.wheel import fetch_wheel
from rlstream.training.verl import keys as keys_mod
from rlstream.training.verl.extract import build_manifest, config_files
from rlstream.training.verl.pin import VERL_VERSION

HERE = Path(keys_mod.__file__).parent


def render(wheel: Path) -> str:
    manifest = build_manifest(config_files(wheel), VERL_VERSION)
    return json.dumps(manifest, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--wheel", type=Path, help="use this wheel instead of downloading")
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    args = ap.parse_args(argv)
    wheel = args.wheel or fetch_wheel(VERL_VERSION, dist="verl")
    path = HERE / keys_mod.MANIFEST
    text = render(wheel)
    count = json.loads(text)["key_count"]
    if args.check:
        same = path.is_file() and path.read_text() == text
        print(f"{path.name}: {'up to date' if same else 'DIFFERS from the wheel'} ({count} keys)")
        return 0 if same else 1
    path.write_text(text)
    print(f"wrote {path} ({count} keys)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
