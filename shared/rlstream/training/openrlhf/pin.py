"""The one OpenRLHF release this adapter drives, and the check that it is the one installed.

OpenRLHF renames and removes flags even in patch releases (0.10.2 dotted every flag with
no aliases; 0.11.2 dropped ``--algo.advantage.is_correction_enable``), so the adapter is
only valid for the release its flag manifest was extracted from. ``docker/Dockerfile.gpu``
installs exactly this version (a unit test keeps its ``ARG OPENRLHF_VERSION`` equal).
"""

from __future__ import annotations

import importlib.metadata

from rlstream.errors import ConfigError

#: the pinned release: the committed flag manifest and docker/Dockerfile.gpu both follow it
OPENRLHF_VERSION = "0.11.2"
#: the module ``python3 -m`` runs for PPO/GRPO
PPO_ENTRY = "openrlhf.cli.train_ppo_ray"


class OpenRLHFVersionError(ConfigError):
    """The installed OpenRLHF is not the release the flag manifest was extracted from."""

    code = "openrlhf_version"


class OpenRLHFMissingError(ConfigError):
    """OpenRLHF is not installed here (it needs CUDA; it runs in the GPU image)."""

    code = "openrlhf_missing"


def installed_version() -> str | None:
    """The installed openrlhf distribution's version, or None when it is not installed."""
    try:
        return importlib.metadata.version("openrlhf")
    except importlib.metadata.PackageNotFoundError:
        return None


def check_installed(required: bool) -> str | None:
    """Refuse a different installed release; with ``required``, refuse a missing one too."""
    found = installed_version()
    if found is None:
        if required:
            raise OpenRLHFMissingError(
                f"openrlhf=={OPENRLHF_VERSION} is not installed here: it needs CUDA and runs "
                "only in the GPU image (docker/Dockerfile.gpu); use --dry-run to see the "
                "command, or --backend builtin to train here"
            )
        return None
    if found != OPENRLHF_VERSION:
        raise OpenRLHFVersionError(
            f"installed openrlhf {found} is not the pinned {OPENRLHF_VERSION}: its flags "
            "differ between releases; install openrlhf=="
            f"{OPENRLHF_VERSION} (docker/Dockerfile.gpu) or regenerate the flag manifest"
        )
    return found
