"""Regenerate the OpenRLHF flag manifest from the pinned release's wheel (never imported).

    python tools/openrlhf/extract_flags.py            # rewrite the committed manifest
    python tools/openrlhf/extract_flags.py --check    # exit 1 if it differs
    python tools/openrlhf/extract_flags.py --wheel path/to/openrlhf-0.11.2-*.whl

Bump ``rlstream.training.openrlhf.pin.OPENRLHF_VERSION`` and docker/Dockerfile.gpu's
``ARG OPENRLHF_VERSION`` together, then run this and review the diff of flags.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rlstream.training.openrlhf import flags as flags_mod
from rlstream.training.openrlhf.extract import build_manifest, source_from_wheel
from rlstream.training.openrlhf.pin import OPENRLHF_VERSION
from rlstream.training.openrlhf.wheel import fetch_wheel

MANIFEST = Path(flags_mod.__file__).with_name(flags_mod.MANIFEST_FILE)


def render(wheel: Path) -> str:
    manifest = build_manifest(source_from_wheel(wheel), OPENRLHF_VERSION)
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--wheel", type=Path, help="use this wheel instead of downloading")
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    args = ap.parse_args(argv)
    text = render(args.wheel or fetch_wheel())
    if args.check:
        same = MANIFEST.read_text() == text
        print(f"{MANIFEST.name}: {'up to date' if same else 'DIFFERS from the wheel'}")
        return 0 if same else 1
    MANIFEST.write_text(text)
    print(f"wrote {MANIFEST} ({json.loads(text)['flag_count']} flags)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
