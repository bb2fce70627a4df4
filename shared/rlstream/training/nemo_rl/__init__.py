"""NeMo RL as a plan generator: a config checked against the pinned tag's key manifest, the
converted dataset and an untested adapter. rlstream cannot run NeMo RL here."""

from rlstream.training.nemo_rl.backend import PLAN_ONLY, NemoRLBackend, write_plan_files
from rlstream.training.nemo_rl.pin import NEMO_RL_TAG

__all__ = ["NEMO_RL_TAG", "PLAN_ONLY", "NemoRLBackend", "write_plan_files"]
