"""Regenerate the OpenRLHF flag manifests from the pinned release's wheel (never imported).

    python tools/openrlhf/extract_flags.py            # rewrite the committed manifests
    python tools/openrlhf/extract_flags.py --check    # exit 1 if any differs
    python tools/openrlhf/extract_flags.py --wheel path/to/openrlhf-0.11.2-*.whl

One manifest per CLI the adapter drives: train_ppo_ray (GRPO), train_sft, train_dpo.
Bump ``rlstream.training.openrlhf.pin.OPENRLHF_VERSION`` and docker/Dockerfile.gpu's
``ARG OPENRLHF_VERSION`` together, then run this and review the diff of flags.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rlstream.training.openrlhf import flags as flags_mod
from rlstream.training.openrlhf.extract import build_manifest, module_path, source_from_wheel
from rlstream.training.openrlhf.pin import OPENRLHF_VERSION
from rlstream.training.openrlhf.wheel import fetch_wheel

HERE = Path(flags_mod.__file__).parent


def render(wheel: Path, cli: str) -> str:
    module = module_path(cli)
    manifest = build_manifest(source_from_wheel(wheel, module), OPENRLHF_VERSION, module)
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--wheel", type=Path, help="use this wheel instead of downloading")
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    args = ap.parse_args(argv)
    wheel = args.wheel or fetch_wheel()
    status = 0
    for cli in flags_mod.CLIS:
        path = HERE / flags_mod.manifest_file(cli)
        text = render(wheel, cli)
        count = json.loads(text)["flag_count"]
        if args.check:
            same = path.is_file() and path.read_text() == text
            print(f"{path.name}: {'up to date' if same else 'DIFFERS from the wheel'} ({count})")
            status |= 0 if same else 1
        else:
            path.write_text(text)
            print(f"wrote {path} ({count} flags)")
    return status


if __name__ == "__main__":
    sys.exit(main())
