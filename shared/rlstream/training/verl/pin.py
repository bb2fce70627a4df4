"""The one verl release this adapter drives, and the check that it is the one installed.

verl moves and renames config keys between minor releases (0.9 moved
``custom_reward_function`` under ``reward.`` and kept the old key only as a migration
shim), so the adapter is only valid for the release its key manifest was extracted from.
``docker/Dockerfile.gpu`` installs exactly this version into its own virtual environment
(:data:`VERL_VENV`): verl's vLLM and transformers pins conflict with OpenRLHF's, so the two
cannot share one.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

from rlstream.errors import ConfigError

#: the pinned release: the committed key manifest and docker/Dockerfile.gpu both follow it
VERL_VERSION = "0.9.1"
#: the module ``python3 -m`` runs (Hydra: ``key=value`` overrides of ``ppo_trainer.yaml``)
ENTRY = "verl.trainer.main_ppo"
#: merges the last FSDP checkpoint into a peft adapter (``lora_adapter/``)
MERGER = "verl.model_merger"
#: where the GPU image installs verl (and rlstream, for the reward file) on its own
VERL_VENV = Path("/opt/verl")


class VerlVersionError(ConfigError):
    """The installed verl is not the release the key manifest was extracted from."""

    code = "verl_version"


class VerlMissingError(ConfigError):
    """verl is not installed here (it needs CUDA; it runs in the GPU image)."""

    code = "verl_missing"


def verl_python() -> str | None:
    """The interpreter that has verl: this one, else the GPU image's verl venv."""
    try:
        importlib.metadata.version("verl")
        return sys.executable
    except importlib.metadata.PackageNotFoundError:
        pass
    venv = VERL_VENV / "bin" / "python"
    return str(venv) if venv.is_file() else None


def installed_version() -> str | None:
    """verl's version in :func:`verl_python`, or None when no interpreter has it."""
    python = verl_python()
    if python is None:
        return None
    if python == sys.executable:
        return importlib.metadata.version("verl")
    probe = "import importlib.metadata as m; print(m.version('verl'))"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or None if done.returncode == 0 else None


def check_installed(required: bool) -> str | None:
    """Refuse a different installed release; with ``required``, refuse a missing one too."""
    found = installed_version()
    if found is None:
        if required:
            raise VerlMissingError(
                f"verl=={VERL_VERSION} is not installed here (nor in {VERL_VENV}): it needs "
                "CUDA and runs only in the GPU image (docker/Dockerfile.gpu); use --dry-run "
                "to see the command, or --backend builtin to train here"
            )
        return None
    if found != VERL_VERSION:
        raise VerlVersionError(
            f"installed verl {found} is not the pinned {VERL_VERSION}: its config keys "
            f"differ between releases; install verl=={VERL_VERSION} (docker/Dockerfile.gpu) "
            "or regenerate the key manifest (tools/verl/extract_config_keys.py)"
        )
    return found
