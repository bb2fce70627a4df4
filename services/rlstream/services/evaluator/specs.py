"""The run's reward spec, resolved as training resolves it, before anything is evaluated.

A dataset's spec id cannot carry every option (an ``nsr`` policy, any option set in
rewards.yaml): training finds such a spec among the reward config's specs
(:class:`~rlstream.grading.SpecResolver`), and so does the evaluator, with the same
``reward_config``. A spec that still cannot be built is a property of the run, not a
passing fault: it becomes a recorded evaluation that failed, with the reason, instead of
a ConfigError that the disposition retries forever.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rlstream.errors import ConfigError
from rlstream.evaluation.run import eval_spec
from rlstream.grading import SpecResolver
from rlstream.registry import Verdict
from rlstream.rewards.config import load_reward_config
from rlstream.services.evaluator.evaluate import EvalJob, Evaluate

log = logging.getLogger("rlstream.services.evaluator")

#: the reasons' prefix, so a failed evaluation reads apart from a rejection on the figures
FAILED = "evaluation failed"
_MAX_REASON = 500


def spec_resolver(reward_config: Path | None) -> SpecResolver:
    """Training's resolver. The config is read now: a missing or invalid file is the
    deployment's fault and stops the service at startup, not each run."""
    if reward_config is None:
        return SpecResolver()
    return SpecResolver(config=load_reward_config(reward_config), config_path=reward_config)


def unbuildable(job: EvalJob, exc: ConfigError) -> Verdict:
    """The verdict recorded for a run whose reward spec cannot be built: ``reject`` (the
    candidate is not promoted) with the reason, and no figures."""
    why = str(exc)[:_MAX_REASON]
    return Verdict(
        decision="reject",
        reasons=(f"{FAILED}: reward spec {job.reward_spec[:120]!r} cannot be built: {why}",),
        report={"status": "failed", "stage": "reward_spec", "error": why},
    )


def checking_spec(evaluate: Evaluate, specs: SpecResolver) -> Evaluate:
    """``evaluate``, run only once the job's reward spec resolves through ``specs``."""

    def run(job: EvalJob) -> Verdict:
        try:
            eval_spec(job.reward_spec, specs)
        except ConfigError as exc:
            log.warning(
                "reward spec cannot be built: recorded as a failed evaluation",
                extra={"run_id": job.run_id, "error": str(exc)[:_MAX_REASON]},
            )
            return unbuildable(job, exc)
        return evaluate(job)

    return run
